;;; gno.el --- Search your own documents through gnod  -*- lexical-binding: t; -*-

;; Version: 0.2.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: matching, tools

;;; Commentary:

;; M-x gno-search (keywords) and M-x gno-query (hybrid: keywords and meaning,
;; reranked) ask the running gnod over its Unix socket (docs/protocol.md: frames of
;; a 4-byte big-endian length and UTF-8 JSON) and list the hits in a grep-mode
;; buffer: RET or `next-error' jumps to the file and line.  The buffer follows the
;; index through gnod's `watch': a document added, changed or removed re-runs its
;; search.  M-x gno-find picks one hit with `completing-read', searching as you type
;; (the word being typed matches as a prefix), best hit first; with consult
;; installed it is M-x gno-consult, consult's asynchronous completion with a
;; preview of each hit at its line.  Calls share one
;; connection to gnod; when the socket is absent, `gnoctl --json' is run instead
;; (it starts gnod).  See docs/editors.md.

;;; Code:

(require 'grep)
(require 'json)
(require 'seq)
(require 'subr-x)

(defgroup gno nil "Search your own documents through gnod." :group 'tools)

(defcustom gno-gnoctl '("gnoctl")
  "Command (program and leading arguments) used when gnod's socket is absent."
  :type '(repeat string))

(defcustom gno-socket nil
  "Socket path; nil means the one gnod uses (GNO_HOME, XDG_RUNTIME_DIR, TMPDIR)."
  :type '(choice (const nil) file))

(defcustom gno-limit 50 "Most hits per keyword search (at most 1000)." :type 'integer)

(defcustom gno-query-limit 10
  "Most hits per hybrid search: reranked, so fewer (at most 32 in standard mode)."
  :type 'integer)

(defcustom gno-timeout 30 "Seconds to wait for gnod's reply." :type 'number)

(defvar gno-last-transport nil "How the last call reached gnod: `socket' or `cli'.")

(defconst gno--protocol 1)

(defvar gno--connection nil
  "The connection calls share (a network process), opened on first use.")

(defvar gno--last-id 0 "The id of the last request, on any connection.")

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
  "STRING's JSON as alists and lists."
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

;;; Connections

(defun gno--connect (&optional notify)
  "Open a connection to gnod's socket; nil when nothing listens there.
Replies are filed by id for `gno--request'; NOTIFY, when given, is called
with the method and params of each notification."
  (let ((buf (generate-new-buffer " *gno-connection*"))
        (path (gno-socket-path)))
    (with-current-buffer buf (set-buffer-multibyte nil))
    (condition-case nil
        (let ((proc (make-network-process :name "gno" :family 'local :service path :buffer buf
                                          :coding 'binary :noquery t
                                          :filter #'gno--filter :sentinel #'gno--sentinel)))
          (process-put proc 'gno-socket path)
          (process-put proc 'gno-replies (make-hash-table))
          (process-put proc 'gno-notify notify)
          proc)
      (file-error (kill-buffer buf) nil))))

(defun gno--filter (proc bytes)
  "Add BYTES to PROC's buffer and dispatch each frame completed.
Frames may arrive split or back to back."
  (when (buffer-live-p (process-buffer proc))
    (with-current-buffer (process-buffer proc)
      (goto-char (point-max))
      (insert bytes)
      (while (and (>= (buffer-size) 4) (>= (buffer-size) (+ 4 (gno--size))))
        (let* ((end (+ 5 (gno--size)))
               (msg (gno--json-read (decode-coding-string (buffer-substring 5 end) 'utf-8))))
          (delete-region 1 end)
          (gno--dispatch proc msg))))))

(defun gno--dispatch (proc msg)
  "File MSG from PROC: a reply under its id if awaited, else a notification."
  (let ((id (alist-get 'id msg))
        (replies (process-get proc 'gno-replies))
        (notify (process-get proc 'gno-notify)))
    (cond (id (when (gethash id replies) (puthash id msg replies)))
          (notify (funcall notify (alist-get 'method msg) (alist-get 'params msg))))))

(defun gno--sentinel (proc _event)
  "Drop PROC's buffer once gnod closed the connection."
  (unless (process-live-p proc)
    (gno--close proc)))

(defun gno--close (proc)
  "Close PROC and kill its buffer."
  (delete-process proc)
  (when (buffer-live-p (process-buffer proc))
    (kill-buffer (process-buffer proc))))

(defun gno--send (proc id method params)
  "Send request ID, METHOD with PARAMS, on PROC; nil when the connection is gone."
  (condition-case nil
      (progn (process-send-string proc (gno--frame `((jsonrpc . "2.0") (id . ,id) (method . ,method)
                                                     (params . ,params) (gno . ,gno--protocol))))
             t)
    (error (gno--close proc) nil)))

(defun gno--request (proc method params)
  "Call METHOD with PARAMS on PROC and wait: (RESULT . ERROR).
Nil when the connection dropped before the reply (gnod restarted)."
  (let ((id (setq gno--last-id (1+ gno--last-id)))
        (replies (process-get proc 'gno-replies))
        (deadline (+ (float-time) gno-timeout)))
    (puthash id 'waiting replies)
    (unwind-protect
        (when (gno--send proc id method params)
          ;; Only this connection is read, and no timer runs: a refresh timer must not
          ;; start a call inside this one.
          (while (and (eq (gethash id replies) 'waiting) (process-live-p proc) (< (float-time) deadline))
            (accept-process-output proc 0.05 nil 1))
          (let ((reply (gethash id replies)))
            (cond ((consp reply) (if (alist-get 'error reply)
                                     (cons nil (alist-get 'error reply))
                                   (cons (alist-get 'result reply) nil)))
                  ((process-live-p proc)
                   (cons nil `((message . ,(format "no reply to %s within %s s" method gno-timeout))))))))
      (remhash id replies))))

(defun gno--connection ()
  "The shared connection to gnod, opened when there is none; nil without a socket.
What gnod sent is read first, so a connection it closed is seen as such rather
than written to (batch Emacs dies of the SIGPIPE)."
  (when gno--connection
    (accept-process-output gno--connection 0 nil 1))
  (unless (and gno--connection (process-live-p gno--connection)
               (equal (process-get gno--connection 'gno-socket) (gno-socket-path)))
    (when gno--connection (gno--close gno--connection))
    (setq gno--connection (gno--connect)))
  gno--connection)

(defun gno--socket-call (method params)
  "Call METHOD with PARAMS over the shared connection: (RESULT . ERROR).
Nil when there is no socket.  A connection gnod dropped (it restarted) is opened
again, once."
  (let ((proc (gno--connection)))
    (when proc
      (or (gno--request proc method params)
          (and (setq proc (gno--connection)) (gno--request proc method params))))))

(defun gno--cli-call (method params)
  "Run gnoctl METHOD --json for PARAMS; (result . error)."
  (let ((args (append (cdr gno-gnoctl)
                      (if (equal method "get")
                          (list method "--json" "--" (alist-get 'ref params))
                        (append (list method "--json" "-n" (number-to-string (alist-get 'limit params)))
                                (when (alist-get 'symbol params) '("--symbol"))
                                (list "--" (alist-get 'query params)))))))
    (with-temp-buffer
      (condition-case err
          (apply #'call-process (car gno-gnoctl) nil '(t nil) nil args)
        (file-error
         (insert (format "cannot run %s (%s): set `gno-gnoctl' to gnoctl's path, e.g. .venv/bin/gnoctl"
                         (car gno-gnoctl) (error-message-string err)))))
      (let ((out (condition-case nil (gno--json-read (buffer-string)) (error nil))))
        (cond ((null out) (cons nil `((message . ,(string-trim (buffer-string))))))
              ((alist-get 'error out) (cons nil (alist-get 'error out)))
              (t (cons out nil)))))))

(defun gno--call (method params)
  "Call METHOD with PARAMS over the socket, else through gnoctl: (RESULT . ERROR)."
  (let ((reply (gno--socket-call method params)))
    (if reply
        (setq gno-last-transport 'socket)
      (setq gno-last-transport 'cli
            reply (gno--cli-call method params)))
    reply))

(defun gno-call (method params)
  "Call METHOD (search, query or get) with PARAMS.
Over the socket, else through gnoctl."
  (let ((reply (gno--call method params)))
    (when (cdr reply)
      (user-error "gno: %s" (alist-get 'message (cdr reply))))
    (car reply)))

(defconst gno--text-max 320
  "Most characters of a hit's passage shown on its line.
A search's passages are no longer; a query's preview may be a whole document.")

(defun gno--shown (text lines)
  "TEXT from its line LINES on, on one line, at most `gno--text-max' characters."
  (let ((from (split-string text "\n")))
    (truncate-string-to-width
     (replace-regexp-in-string "[ \t\n]+" " " (string-join (nthcdr lines from) "\n"))
     gno--text-max nil nil "…")))

(defun gno--hits (method result &optional listed)
  "Each hit of RESULT, the reply to METHOD, as (FILE LINE TEXT COLUMN HIT).
LISTED (completion's candidates, made again at each key): a converted document's
FILE is its own, its text written only when it is visited (`gno--visit-file')."
  (mapcar (lambda (h)
            (let* ((where (if (equal method "query") (alist-get 'preview h) (alist-get 'snippet h)))
                   (line (or (alist-get (if (equal method "query") 'start_line 'line) where) 1))
                   (place (gno--match-place where))
                   (symbol (alist-get 'symbol where))
                   ;; A query's preview from its hit's line: it may be a whole document.
                   (text (gno--shown (or (alist-get 'text where) "") (if (equal method "query") (car place) 0))))
              (list (if (and listed (alist-get 'converted h)) (alist-get 'abs_path h) (gno--hit-file h))
                    (+ line (car place))
                    (format "%s [%.2f] %s%s" (alist-get 'title h) (alist-get 'score h)
                            (if (stringp symbol) (concat symbol ": ") "") text)
                    (cdr place)
                    h)))
          (alist-get 'hits result)))

(defvar gno--text-directory (expand-file-name (format "gno-%d/text" (user-uid)) temporary-file-directory)
  "Where converted documents' texts are written for visiting (`gno--hit-file'): the
user's own (0700), as gnod's runtime directory there.")

(defun gno--hit-file (hit)
  "What visiting HIT visits: its file.
For a converted document (a web page, a PDF: its lines number the Markdown
gnod holds, not its file's), a copy of that text under `gno--text-directory',
written now (grep-mode visits only what exists)."
  (if (not (alist-get 'converted hit))
      (alist-get 'abs_path hit)
    (let* ((ref (concat (alist-get 'collection hit) "/" (alist-get 'path hit)))
           (file (concat (file-name-as-directory gno--text-directory) ref ".md"))
           (doc (car (gno--call "get" `((ref . ,ref))))))
      (if (null doc)
          (alist-get 'abs_path hit)  ; gone since the search: its file says so
        (with-file-modes #o700
          (make-directory (file-name-directory file) t))
        (let ((coding-system-for-write 'utf-8-unix))
          (with-file-modes #o600
            (write-region (alist-get 'content doc) nil file nil 'silent)))
        (when-let ((buf (get-file-buffer file)))  ; shown before: the text as it is now
          (with-current-buffer buf
            (unless (buffer-modified-p)
              (revert-buffer t t t))))
        file))))

(defun gno--text-read-only ()
  "A converted document's text (`gno--hit-file') is read-only.
It is gnod's, not a file's."
  (when (and buffer-file-name (string-prefix-p (file-name-as-directory gno--text-directory) buffer-file-name))
    (setq buffer-read-only t)))

(add-hook 'find-file-hook #'gno--text-read-only)

(defun gno--match-place (passage)
  "Where the first word PASSAGE matched starts: (LINES . COLUMN).
LINES after the passage's first line (a C function's name is on the line
after its type: `static void' then the name), COLUMN in characters, so a visit
lands on the name searched for.  When the line was cut to a window of itself
\(\"…\" first, its `offset' bytes of the line not shown), COLUMN is
\(BYTES . CHARACTERS): the window's start, then the match's place in it;
\(0 . 0) without a match."
  (let ((text (or (alist-get 'text passage) ""))
        (offset (or (alist-get 'offset passage) 0))
        (match (car (alist-get 'matches passage))))
    (if (not (and match (<= (car match) (length text))))
        '(0 . 0)
      (let* ((before (substring text 0 (car match)))
             (newline (string-match-p "\n[^\n]*\\'" before))
             (start (if newline (1+ newline) 0)))
        (cons (- (length (split-string before "\n")) 1)
              (if (and (= start 0) (> offset 0))
                  (cons offset (max 0 (1- (car match))))
                (- (car match) start)))))))

(defun gno--search-hits (method query &optional symbol)
  "The hits of METHOD for QUERY, best first; SYMBOL: where QUERY is defined.
The reply's notes are shown (`nothing defines kfree: showing free')."
  (let ((result (gno-call method `((query . ,query)
                                   (limit . ,(if (equal method "query") gno-query-limit gno-limit))
                                   ,@(when symbol '((symbol . t)))))))
    (when-let ((notes (alist-get 'notes result)))
      (message "gno: %s" (string-join notes "; ")))
    (gno--hits method result)))

(defun gno--goto-line (line &optional column)
  "Move to the start of LINE, or to its COLUMN-th character (at most its end).
COLUMN (BYTES . CHARACTERS) is CHARACTERS after its first BYTES
\(`gno--match-place')."
  (goto-char (point-min))
  (forward-line (1- line))
  (when (consp column)
    (goto-char (min (line-end-position)
                    (or (byte-to-position (+ (position-bytes (point)) (car column))) (point-max))))
    (setq column (cdr column)))
  (when column
    (forward-char (min column (- (line-end-position) (point))))))

;;; Results buffer

(defvar-local gno--search nil "The (METHOD QUERY SYMBOL) whose hits this buffer lists.")

(defvar-local gno--watch nil
  "This buffer's subscription to changes of the index: a connection of its own.")

(defvar-local gno--refresh-timer nil "The pending re-run of this buffer's search.")

(defvar gno-results-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "g" #'revert-buffer)
    map)
  "Keys of `gno-results-mode': grep's, and g runs the search again.")

(define-derived-mode gno-results-mode grep-mode "gno"
  "Hits of a gno search; they follow the documents as gnod indexes changes.
\\[revert-buffer] runs the search again (grep's g would run `compile-command')."
  (setq-local revert-buffer-function #'gno--revert)
  (add-hook 'kill-buffer-hook #'gno--unsubscribe nil t)
  (add-hook 'change-major-mode-hook #'gno--unsubscribe nil t))

(defun gno--render (hits)
  "List HITS in the current buffer; point and each window keep their line."
  (let ((line (line-number-at-pos))
        (windows (mapcar (lambda (w) (cons w (line-number-at-pos (window-point w))))
                         (get-buffer-window-list nil nil t)))
        (inhibit-read-only t))
    (erase-buffer)
    (insert (format "gno %s: %s (%d hit%s)\n\n" (nth 0 gno--search) (nth 1 gno--search) (length hits)
                    (if (= (length hits) 1) "" "s")))
    ;; A NUL after the file name, as `grep -Z' writes it (shown as ":"): grep-mode reads
    ;; the name to there, so a name holding ":12:" is not cut at its first colon.
    (dolist (h hits)
      (insert (format "%s\0%d:%s\n" (nth 0 h) (nth 1 h) (nth 2 h))))
    (gno--goto-line line)
    (dolist (w windows)
      (set-window-point (car w) (save-excursion (gno--goto-line (cdr w)) (point))))))

(defun gno--revert (&rest _)
  "Run this buffer's search again; subscribe anew if gnod dropped it (restarted)."
  (gno--render (apply #'gno--search-hits gno--search))
  (gno--subscribe))

(defun gno--subscribe ()
  "Subscribe the current buffer to what gnod indexes, unless it is already.
Each results buffer has a connection of its own for this: gnod ends a
subscription only when its connection closes, which is how killing the buffer
ends it.  The search covers every collection, and so does the subscription:
any document added, changed or removed may change the hits."
  (unless (and gno--watch (process-live-p gno--watch))
    (let* ((buffer (current-buffer))
           (proc (gno--connect (lambda (method _params)
                                 (when (member method '("change" "lagged"))
                                   (gno--refresh-soon buffer))))))
      (when (and proc (gno--send proc (setq gno--last-id (1+ gno--last-id)) "watch" '((collections . []))))
        (setq gno--watch proc)))))

(defun gno--unsubscribe ()
  "End the current buffer's subscription and cancel its pending re-run."
  (when (timerp gno--refresh-timer)
    (cancel-timer gno--refresh-timer))
  (when gno--watch
    (gno--close gno--watch)
    (setq gno--watch nil)))

(defun gno--refresh-soon (buffer)
  "Re-run BUFFER's search after 0.2 s without a change (a checkout: one search)."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (when (timerp gno--refresh-timer)
        (cancel-timer gno--refresh-timer))
      (setq gno--refresh-timer (run-with-timer 0.2 nil #'gno--refresh buffer)))))

(defun gno--refresh (buffer)
  "Re-run BUFFER's search; from a timer, so a failure is shown, not signaled."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (condition-case err
          (revert-buffer t t)
        (error (message "%s" (error-message-string err)))))))

(defun gno--show (method query &optional symbol hits)
  "List the hits of METHOD for QUERY in the *gno* buffer, which then follows them.
SYMBOL: the places QUERY is defined; HITS: those hits, when already asked for."
  (let ((hits (or hits (gno--search-hits method query symbol)))
        (buf (get-buffer-create "*gno*")))
    (with-current-buffer buf
      (unless (derived-mode-p 'gno-results-mode)
        (gno-results-mode))
      (setq gno--search (list method query symbol))
      (gno--render hits)
      (goto-char (point-min))
      (dolist (w (get-buffer-window-list buf nil t))
        (set-window-point w (point-min)))
      (gno--subscribe))
    (display-buffer buf)
    buf))

;;;###autoload
(defun gno-search (query)
  "Keyword search for QUERY; hits in a `grep-mode' buffer."
  (interactive "sgno search: ")
  (gno--show "search" query))

;;;###autoload
(defun gno-query (query)
  "Hybrid search (keywords and meaning) for QUERY; hits in a `grep-mode' buffer."
  (interactive "sgno query: ")
  (gno--show "query" query))

;;;###autoload
(defun gno-symbol (name)
  "Go to where NAME is defined in source code (default: the symbol at point).
One definition is visited; several are listed in the *gno* buffer."
  (interactive
   (let ((at (thing-at-point 'symbol t)))
     (list (read-string (if at (format "gno definition of (default %s): " at) "gno definition of: ")
                        nil nil at))))
  (let ((hits (gno--search-hits "search" name t)))
    (cond ((null hits) (user-error "gno: no definition of %s" name))
          ((cdr hits) (gno--show "search" name t hits))
          (t (find-file (nth 0 (car hits)))
             (gno--goto-line (nth 1 (car hits)) (nth 3 (car hits)))))))

;;; Completion

(defconst gno--in-gnod-order '((display-sort-function . identity) (cycle-sort-function . identity))
  "Completion metadata keeping gnod's order, best hit first, instead of sorting.")

(defun gno-as-typed (text)
  "The query sent for TEXT while it is typed, as the web page sends it.
The word still being typed (nothing after it yet) goes as a prefix, so \"dock\"
already finds docker; a quoted or negated word, one letter, a word already
ending in `*' or in no letter or digit (C++) goes as it is.  A phrase being
typed is closed, its last word a prefix too (\"rotor imb searches
\"rotor imb*\": an open quote was an error at every key)."
  (if (= (% (1- (length (split-string text "\""))) 2) 1)
      (let* ((words (split-string (substring text (1+ (string-match "\"[^\"]*\\'" text)))))
             (typing (and words (not (string-match-p "[[:space:]]\\'" text))
                          (not (string-match-p "\\*" (car (last words)))))))
        (concat (string-trim-right text) (if typing "*" "") "\""))
    (let ((last (car (last (split-string text)))))
      (if (or (null last) (string-match-p "[[:space:]]\\'" text) (string-match-p "[\"*]" last)
              (string-prefix-p "-" last) (< (length last) 2) (not (string-match-p "[[:alnum:]]\\'" last)))
          text
        (concat text "*")))))

(defun gno--candidates (query hits)
  "Search QUERY: (ok . LABELS), best first and filed in HITS, or (error . MESSAGE).
The reply's notes are shown (`mutex_l*': the `*' of one letter is text, `mutex'
was searched alone)."
  (let ((reply (gno--call "search" `((query . ,query) (limit . ,gno-limit)))))
    (when-let ((notes (and (not (cdr reply)) (alist-get 'notes (car reply)))))
      (message "gno: %s" (string-join notes "; ")))
    (if (cdr reply)
        (cons 'error (alist-get 'message (cdr reply)))
      (cons 'ok (mapcar (lambda (h)
                          (let ((label (format "%s:%d %s" (abbreviate-file-name (nth 0 h)) (nth 1 h) (nth 2 h))))
                            (puthash label h hits)
                            label))
                        (gno--hits "search" (car reply) t))))))

(defun gno--fixed-table (query hits)
  "A completion table of QUERY's hits, best first; HITS maps each label to its hit."
  (let ((found (gno--candidates query hits)))
    (when (eq (car found) 'error)
      (user-error "gno: %s" (cdr found)))
    (lambda (string pred action)
      (if (eq action 'metadata)
          `(metadata ,@gno--in-gnod-order)
        (complete-with-action action (cdr found) string pred)))))

(defun gno--live-table (hits replies)
  "A completion table whose candidates are gnod's hits for the whole input.
HITS maps each label to its hit; REPLIES caches gnod's reply per input, as
completion asks several times for each.  An input gnod rejects (punctuation
alone) keeps the last good candidates.  The table answers the `gno' completion
style, which `gno-find' sets for its category."
  (let ((good nil))
    (lambda (string pred action)
      (let ((lookup
             (lambda ()
               (cond ((gethash string hits) (list string))
                     ((string-blank-p string) (setq good nil))
                     (t (let ((reply (or (gethash string replies)
                                         (puthash string (gno--candidates (gno-as-typed string) hits) replies))))
                          (if (eq (car reply) 'ok) (setq good (cdr reply)) good)))))))
        (pcase action
          ('metadata `(metadata (category . gno) ,@gno--in-gnod-order))
          (`(boundaries . ,_) nil)
          (`(gno--try . ,point) (cons 'gno--try (cond ((gethash string hits) t)
                                                      ((funcall lookup) (cons string point)))))
          (`(gno--all . ,_) (cons 'gno--all (let ((found (funcall lookup))) (and found (append found 0)))))
          (_ (complete-with-action action (funcall lookup) string pred)))))))

(defun gno--style (op string table pred point)
  "Ask TABLE for OP on STRING (with PRED, POINT); nil unless it is a `gno' table."
  (when (functionp table)
    (let ((answer (funcall table string pred (cons op point))))
      (when (eq (car-safe answer) op)
        (cdr answer)))))

(defun gno--try-completion (string table pred point)
  "The `gno' style's `try-completion' of STRING in TABLE (PRED, POINT).
A query is not completed as text: it stays as typed."
  (gno--style 'gno--try string table pred point))

(defun gno--all-completions (string table pred point)
  "The `gno' style's completions of STRING in TABLE (PRED, POINT): gnod's hits."
  (gno--style 'gno--all string table pred point))

(add-to-list 'completion-styles-alist
             '(gno gno--try-completion gno--all-completions
                   "The hits gnod finds for the whole input, in its order."))

(defun gno--live-setup (replies)
  "Set up a live `gno-find' minibuffer; REPLIES is its table's cache.
After each command: once *Completions* was shown, it follows the input (the
default completion UI lists only when asked); an input gnod rejects says why."
  (lambda ()
    ;; A query is words: SPC inserts a space, it does not complete a word.
    (use-local-map (let ((map (make-sparse-keymap)))
                     (set-keymap-parent map (current-local-map))
                     (define-key map " " #'self-insert-command)
                     map))
    (let ((seen (minibuffer-contents))
          (listing nil))
      (add-hook 'post-command-hook
                (lambda ()
                  (let ((typed (minibuffer-contents)))
                    (setq listing (or listing (get-buffer-window "*Completions*" 0)))
                    (when (and (not (equal typed seen)) (not (input-pending-p)))
                      (setq seen typed)
                      (when listing
                        (minibuffer-completion-help)))
                    (let ((reply (gethash typed replies)))
                      (when (eq (car reply) 'error)
                        (message "gno: %s" (cdr reply))))))
                90 t))))

(declare-function org-fold-show-context "org-fold")
(declare-function org-show-context "org")

(defun gno--reveal ()
  "Unfold the Org subtree hiding point, as following a link does."
  (when (and (invisible-p (point)) (derived-mode-p 'org-mode))
    (if (fboundp 'org-fold-show-context)
        (org-fold-show-context 'link-search)
      (org-show-context 'link-search))))

(defun gno--reveal-visited ()
  "After RET or `next-error' visited a hit of a results buffer: `gno--reveal' it.
On `next-error-hook', which runs wherever the visit left off: only for gno's."
  (when (and (buffer-live-p next-error-last-buffer)
             (eq (buffer-local-value 'major-mode next-error-last-buffer) 'gno-results-mode))
    (with-current-buffer (window-buffer) (gno--reveal))))

(add-hook 'next-error-hook #'gno--reveal-visited)

(defun gno--visit-file (hit)
  "The file visiting HIT (one of `gno--hits') opens: a converted document's text."
  (if (alist-get 'converted (nth 4 hit)) (gno--hit-file (nth 4 hit)) (nth 0 hit)))

(defun gno--visit (hit)
  "Visit HIT's file at its line, on the word it matched (unfolded, in Org)."
  (find-file (gno--visit-file hit))
  (gno--goto-line (nth 1 hit) (nth 3 hit))
  (gno--reveal))

;;;###autoload
(defun gno-find (&optional query)
  "Visit a hit picked with `completing-read', best hit first.
Interactively the hits follow what is typed; RET on the typed text visits its
best hit.  With consult installed (and `gno-find-use-consult'), that is
`gno-consult'.  From Lisp, QUERY's hits are offered instead."
  (interactive)
  (if (and (not query) (gno--consult-p))
      (gno-consult)
    (let* ((hits (make-hash-table :test #'equal))
           (replies (make-hash-table :test #'equal))
           ;; Its own style, whatever the user's (orderless, or fido's flex): they
           ;; would match the labels against the query instead of asking gnod.
           (completion-category-overrides (cons '(gno (styles gno)) completion-category-overrides))
           (table (if query (gno--fixed-table query hits) (gno--live-table hits replies)))
           (choice (minibuffer-with-setup-hook (if query #'ignore (gno--live-setup replies))
                     (completing-read "gno: " table)))
           (hit (gethash (if (gethash choice hits)
                             choice
                           (car (completion-all-completions choice table nil (length choice))))
                         hits)))
      (unless hit
        (user-error "gno: No hit for %S" choice))
      (gno--visit hit))))

;;; Consult

(defcustom gno-find-use-consult t
  "Whether `gno-find' is `gno-consult' when consult is installed."
  :type 'boolean)

(defvar consult--completion-refresh-hook)
(defvar consult-async-min-input)
(defvar consult-async-input-throttle)
(defvar consult-async-input-debounce)
(declare-function consult--read "ext:consult")
(declare-function consult--async-sink "ext:consult")
(declare-function consult--async-indicator "ext:consult")
(declare-function consult--async-throttle "ext:consult")
(declare-function consult--async-split "ext:consult")
(declare-function consult--temporary-files "ext:consult")
(declare-function consult--jump-preview "ext:consult")

(defvar-local gno--consult-answered nil
  "In a `gno-consult' minibuffer, the input gnod last answered (hits or error).")

(defvar-local gno--consult-listing nil
  "Non-nil once a `gno-consult' minibuffer showed *Completions*: it then follows.")

(defun gno--consult-p ()
  "Non-nil when consult is installed, in a version `gno-consult' works with.
That is consult 0.32 to 1.x, whose async pipeline stages each take the next
stage as their first argument.  With another, `gno-find' stays as it is."
  (and gno-find-use-consult
       (require 'consult nil t)
       (seq-every-p #'fboundp '(consult--read consult--async-sink consult--async-indicator
                                              consult--async-throttle consult--async-split
                                              consult--temporary-files consult--jump-preview))
       (= (car (func-arity 'consult--async-split)) 1)
       (= (car (func-arity 'consult--async-throttle)) 1)))

(defun gno--consult-search (async hits best)
  "The stage of `gno-consult' that asks gnod, passing the hits on to ASYNC.
Each input is searched with the word being typed as a prefix (`gno-as-typed'),
and its labels (filed in HITS) replace the candidates, in gnod's order; the car
of BEST becomes (INPUT . ITS FIRST LABEL), for RET on the typed text.  An input
gnod rejects (punctuation alone) keeps the last candidates, says why, and
turns the indicator to failed.  An empty input (consult's throttle sends one to
cancel the previous search) changes nothing."
  (let ((minibuffer nil))
    (lambda (action &rest args)
      (cond
       ((eq action 'setup)
        (setq minibuffer (current-buffer))
        (add-hook 'consult--completion-refresh-hook #'gno--consult-refresh-list nil t)
        (apply async action args))
       ((not (stringp action)) (apply async action args))
       ((string-empty-p action) nil)
       (t (let ((found (gno--candidates (gno-as-typed action) hits)))
            (if (eq (car found) 'ok)
                (progn (setcar best (cons action (cadr found)))
                       (funcall async 'flush)
                       (when (cdr found) (funcall async (cdr found)))
                       (funcall async 'indicator 'finished))
              (funcall async 'indicator 'failed)
              (message "gno: %s" (cdr found)))
            (when (buffer-live-p minibuffer)
              (with-current-buffer minibuffer
                (setq gno--consult-answered action)))
            (funcall async 'refresh)
            nil))))))

(defun gno--consult-refresh-list ()
  "Once *Completions* was shown, list the new candidates there.
The default completion UI lists only when asked; vertico, icomplete and mct
refresh through consult's own hooks."
  (when (or gno--consult-listing
            (setq gno--consult-listing (and (get-buffer-window "*Completions*" 0) t)))
    (minibuffer-completion-help)))

(defvar gno--consult-default-ui-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'minibuffer-completion-help)
    map)
  "`gno-consult''s keys in the default completion UI.
TAB lists the hits, as `?' does: it completed the query as text, adding the
labels' common start to it.")

(defun gno--completion-ui-p ()
  "Non-nil when a completion UI other than the default one is on.
Its TAB is its own."
  (seq-some (lambda (mode) (and (boundp mode) (symbol-value mode)))
            '(vertico-mode icomplete-mode fido-mode mct-mode ivy-mode helm-mode
                           selectrum-mode)))

(defun gno--consult-state ()
  "A consult state function previewing each hit's file at its line."
  (let ((open (consult--temporary-files))
        (preview (consult--jump-preview)))
    (lambda (action hit)
      (unless hit
        (funcall open))
      (when (eq action 'preview)
        (funcall preview action
                 (when-let ((buffer (and (consp hit) (funcall open (gno--visit-file hit)))))
                   (when (bufferp buffer)
                     (with-current-buffer buffer
                       (save-restriction
                         (widen)
                         (save-excursion (gno--goto-line (nth 1 hit) (nth 3 hit)) (point-marker)))))))))))

;;;###autoload
(defun gno-consult ()
  "Visit a hit picked through consult, searching gnod as you type.
The candidates are gnod's hits for the whole input, best first (the word being
typed matches as a prefix), refreshed by consult's asynchronous completion as
the input changes; the highlighted hit is previewed at its line.  RET visits a
hit at its line, or the typed text's best hit.  A query gnod rejects keeps the
last candidates and shows why."
  (interactive)
  (unless (gno--consult-p)
    (user-error "gno: Consult (0.32 to 1.x) is not installed"))
  (let* ((hits (make-hash-table :test #'equal))
         (best (list nil))  ; (the input last answered . its first label)
         ;; From the second letter, as gnod matches a word being typed (its prefixes).
         (consult-async-min-input (min consult-async-min-input 2))
         ;; Consult waits for a pause in the typing, made for starting a grep process
         ;; each time; gnod answers in milliseconds (at 0.4 s it searched only once the
         ;; typing stopped, 0.6 s after the last key).
         (consult-async-input-throttle (min consult-async-input-throttle 0.1))
         (consult-async-input-debounce (min consult-async-input-debounce 0.05))
         (async (consult--async-split
                 (consult--async-throttle
                  (gno--consult-search (consult--async-indicator (consult--async-sink)) hits best))
                 ;; The whole input is the query: none of consult's separators.
                 (lambda (input &rest _) (list input (length input)))))
         (choice (consult--read async
                                :prompt "gno: "
                                :sort nil
                                :require-match nil
                                :keymap (unless (gno--completion-ui-p) gno--consult-default-ui-map)
                                :state (gno--consult-state)
                                :lookup (lambda (selected &rest _) (or (gethash selected hits) selected))))
         (hit (cond ((consp choice) choice)
                    ;; The typed text gnod just answered: its best hit, not a search again.
                    ((and (stringp choice) (equal choice (car (car best)))) (gethash (cdr (car best)) hits))
                    (t (let ((found (and (stringp choice) (not (string-blank-p choice))
                                         (gno--candidates (gno-as-typed choice) hits))))
                         (and (eq (car found) 'ok) (gethash (cadr found) hits)))))))
    (unless hit
      (user-error "gno: No hit for %S" choice))
    (gno--visit hit)))

(provide 'gno)
;;; gno.el ends here
