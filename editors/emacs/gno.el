;;; gno.el --- Search your own documents through gnod  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: matching, tools

;;; Commentary:

;; M-x gno-search (keywords) and M-x gno-query (hybrid: keywords and meaning,
;; reranked) ask the running gnod over its Unix socket (docs/protocol.md: frames of
;; a 4-byte big-endian length and UTF-8 JSON) and list the hits in a grep-mode
;; buffer: RET or `next-error' jumps to the file and line.  M-x gno-find picks one
;; hit with `completing-read'.  When the socket is absent, `gnoctl --json' is run
;; instead (it starts gnod).  See docs/editors.md.

;;; Code:

(require 'grep)
(require 'json)
(require 'subr-x)

(defgroup gno nil "Search your own documents through gnod." :group 'tools)

(defcustom gno-gnoctl '("gnoctl")
  "Command (program and leading arguments) used when gnod's socket is absent."
  :type '(repeat string))

(defcustom gno-socket nil
  "gnod's socket; nil means the path gnod uses (GNO_HOME, XDG_RUNTIME_DIR, TMPDIR)."
  :type '(choice (const nil) file))

(defcustom gno-limit 50 "Most hits per search." :type 'integer)

(defcustom gno-timeout 30 "Seconds to wait for gnod's reply." :type 'number)

(defvar gno-last-transport nil "How the last call reached gnod: `socket' or `cli'.")

(defconst gno--protocol 1)

(defun gno-socket-path ()
  "Where gnod listens."
  (let ((home (getenv "GNO_HOME"))
        (xdg (getenv "XDG_RUNTIME_DIR")))
    (cond (gno-socket gno-socket)
          ((and home (not (string-empty-p home))) (expand-file-name "run/gnod.sock" home))
          ((and xdg (not (string-empty-p xdg))) (expand-file-name "gno/gnod.sock" xdg))
          (t (expand-file-name (format "gno-%d/gnod.sock" (user-uid))
                               (or (getenv "TMPDIR") "/tmp"))))))

(defun gno--json-read (string)
  (json-parse-string string :object-type 'alist :array-type 'list :null-object nil :false-object nil))

(defun gno--frame (object)
  "OBJECT as one frame: a big-endian length, then its JSON in UTF-8."
  (let* ((body (encode-coding-string (json-encode object) 'utf-8))
         (n (length body)))
    (concat (unibyte-string (logand (ash n -24) 255) (logand (ash n -16) 255)
                            (logand (ash n -8) 255) (logand n 255))
            body)))

(defun gno--size ()
  "The length in the frame header at the start of the current (unibyte) buffer."
  (let ((b (string-to-list (buffer-substring 1 5))))
    (+ (ash (nth 0 b) 24) (ash (nth 1 b) 16) (ash (nth 2 b) 8) (nth 3 b))))

(defun gno--socket-call (method params)
  "Call METHOD with PARAMS over the socket.
Return (RESULT . ERROR), or nil when there is no socket."
  (let* ((buf (generate-new-buffer " *gno-socket*"))
         (proc (condition-case nil
                   (make-network-process :name "gno" :family 'local :service (gno-socket-path)
                                         :buffer buf :coding 'binary :noquery t)
                 (file-error nil))))
    (if (not proc)
        (progn (kill-buffer buf) nil)
      (unwind-protect
          (with-current-buffer buf
            (set-buffer-multibyte nil)
            (process-send-string proc (gno--frame `((jsonrpc . "2.0") (id . 1) (method . ,method)
                                                     (params . ,params) (gno . ,gno--protocol))))
            (let ((deadline (+ (float-time) gno-timeout)) reply)
              (while (and (not reply) (< (float-time) deadline))
                (let ((n (and (>= (buffer-size) 4) (gno--size))))
                  (if (or (null n) (< (buffer-size) (+ 4 n)))
                      (unless (or (accept-process-output proc 0.05) (process-live-p proc))
                        (setq deadline 0))
                    (let ((msg (gno--json-read (decode-coding-string (buffer-substring 5 (+ 5 n)) 'utf-8))))
                      (delete-region 1 (+ 5 n))
                      (when (equal (alist-get 'id msg) 1) (setq reply msg))))))
              (cond (reply (if (alist-get 'error reply)
                               (cons nil (alist-get 'error reply))
                             (cons (alist-get 'result reply) nil)))
                    (t (cons nil `((message . ,(format "no reply to %s within %s s" method gno-timeout))))))))
        (delete-process proc)
        (kill-buffer buf)))))

(defun gno--cli-call (method params)
  "Run gnoctl METHOD --json for PARAMS; (result . error)."
  (let ((args (append (cdr gno-gnoctl)
                      (list method "--json" "-n" (number-to-string (alist-get 'limit params))
                            "--" (alist-get 'query params)))))
    (with-temp-buffer
      (apply #'call-process (car gno-gnoctl) nil '(t nil) nil args)
      (let ((out (condition-case nil (gno--json-read (buffer-string)) (error nil))))
        (cond ((null out) (cons nil `((message . ,(string-trim (buffer-string))))))
              ((alist-get 'error out) (cons nil (alist-get 'error out)))
              (t (cons out nil)))))))

(defun gno-call (method params)
  "Call METHOD (search or query) with PARAMS: over the socket, else through gnoctl."
  (let ((reply (gno--socket-call method params)))
    (if reply
        (setq gno-last-transport 'socket)
      (setq gno-last-transport 'cli
            reply (gno--cli-call method params)))
    (when (cdr reply)
      (user-error "gno: %s" (alist-get 'message (cdr reply))))
    (car reply)))

(defun gno--hits (method result)
  "Each hit of RESULT as (FILE LINE TEXT)."
  (mapcar (lambda (h)
            (let* ((where (if (equal method "query") (alist-get 'preview h) (alist-get 'snippet h)))
                   (line (or (alist-get (if (equal method "query") 'start_line 'line) where) 1))
                   (text (replace-regexp-in-string "[ \t\n]+" " " (or (alist-get 'text where) ""))))
              (list (alist-get 'abs_path h) line
                    (format "%s [%.2f] %s" (alist-get 'title h) (alist-get 'score h) text))))
          (alist-get 'hits result)))

(defun gno--show (method query)
  (let* ((hits (gno--hits method (gno-call method `((query . ,query) (limit . ,gno-limit)))))
         (buf (get-buffer-create "*gno*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "gno %s: %s (%d hits)\n\n" method query (length hits)))
        (dolist (h hits)
          (insert (format "%s:%d:%s\n" (nth 0 h) (nth 1 h) (nth 2 h)))))
      (grep-mode)
      (goto-char (point-min)))
    (display-buffer buf)
    buf))

;;;###autoload
(defun gno-search (query)
  "Keyword search for QUERY; hits in a grep-mode buffer."
  (interactive "sgno search: ")
  (gno--show "search" query))

;;;###autoload
(defun gno-query (query)
  "Hybrid search (keywords and meaning) for QUERY; hits in a grep-mode buffer."
  (interactive "sgno query: ")
  (gno--show "query" query))

;;;###autoload
(defun gno-find (query)
  "Pick one hit of QUERY with `completing-read' and visit it."
  (interactive "sgno find: ")
  (let* ((hits (gno--hits "search" (gno-call "search" `((query . ,query) (limit . ,gno-limit)))))
         (choices (mapcar (lambda (h) (cons (format "%s:%d %s" (abbreviate-file-name (nth 0 h)) (nth 1 h) (nth 2 h)) h))
                          hits))
         (hit (cdr (assoc (completing-read "gno: " choices nil t) choices))))
    (find-file (nth 0 hit))
    (goto-char (point-min))
    (forward-line (1- (nth 1 hit)))))

(provide 'gno)
;;; gno.el ends here
