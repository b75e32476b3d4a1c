-- gno for Neovim: search your documents through the running gnod (see docs/editors.md).
--   :Gno {query}       keyword search into the quickfix list
--   :GnoQuery {query}  hybrid search (keywords + meaning, reranked) into the quickfix list
--   :GnoPick [query]   live picker: telescope when installed, else a prompt that re-queries as you type
local rpc = require('gno.rpc')

local M = {}

M.config = {
  gnoctl = { 'gnoctl' }, -- the command used when gnod's socket is absent (it starts gnod)
  socket = nil, -- default: the path gnod uses (GNO_HOME, XDG_RUNTIME_DIR, TMPDIR)
  limit = 50, -- keyword search's hits (at most 1000)
  query_limit = 10, -- hybrid search's: reranked, so fewer (at most 32 in standard mode, as gnoctl query)
  timeout_ms = 30000,
  open_quickfix = true,
}
M.last_transport = nil -- 'socket' or 'cli': how the last call reached gnod

local conn = nil

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  if type(M.config.gnoctl) == 'string' then
    M.config.gnoctl = { M.config.gnoctl }
  end
  if conn then
    conn:close()
    conn = nil
  end
end

--- The live connection to gnod, or nil when its socket is absent.
function M.connection()
  if conn and not conn.closed then
    return conn
  end
  conn = rpc.connect(M.config.socket or rpc.socket_path(), 500)
  return conn
end

local cli_args = {
  search = function(p)
    local args = { 'search', '--json', '-n', tostring(p.limit) }
    if p.symbol then
      table.insert(args, '--symbol')
    end
    return vim.list_extend(args, { '--', p.query })
  end,
  query = function(p)
    return { 'query', '--json', '-n', tostring(p.limit), '--', p.query }
  end,
  get = function(p)
    return { 'get', '--json', '--', p.ref }
  end,
}

--- The gnoctl command line of a call, or nil and why it cannot run.
local function cli_command(method, params)
  local cmd = vim.list_extend(vim.deepcopy(M.config.gnoctl), cli_args[method](params))
  if vim.fn.executable(cmd[1]) ~= 1 then -- E475 and a Lua traceback otherwise
    return nil, {
      code = 'GNOCTL_NOT_FOUND',
      message = string.format(
        "gnod is not running and gnoctl (%s) is not a program on PATH: set require('gno').setup({ gnoctl = ... })",
        cmd[1]
      ),
    }
  end
  return cmd
end

--- gnoctl's JSON output: result, or nil and an error table.
local function decoded_output(out)
  local ok, decoded = pcall(vim.json.decode, out)
  if not ok or type(decoded) ~= 'table' then
    return nil, { code = 'CLI', message = vim.trim(out) }
  end
  if decoded.error then
    return nil, decoded.error
  end
  return decoded
end

--- Run `gnoctl METHOD --json` (which starts gnod when needed); result or nil, error.
local function via_cli(method, params)
  local cmd, err = cli_command(method, params)
  if not cmd then
    return nil, err
  end
  return decoded_output(vim.fn.system(cmd))
end

--- via_cli without waiting: `done(result, err)` runs on the main loop when gnoctl exits.
local function via_cli_async(method, params, done)
  local cmd, err = cli_command(method, params)
  if not cmd then
    return done(nil, err)
  end
  local out = {}
  vim.fn.jobstart(cmd, {
    stdout_buffered = true,
    on_stdout = function(_, data) out = data end,
    on_exit = function() done(decoded_output(table.concat(out, '\n'))) end,
  })
end

--- One call (search, query or get), over the socket or else through gnoctl.
function M.call(method, params)
  local c = M.connection()
  if c then
    M.last_transport = 'socket'
    local result, err = c:call(method, params, M.config.timeout_ms)
    if not (err and err.code == 'DISCONNECTED') then
      return result, err
    end
  end
  M.last_transport = 'cli'
  return via_cli(method, params)
end

--- M.call without waiting: `done(result, err)` runs on the main loop when gnod answers,
--- and the editor goes on meanwhile (a hybrid query embeds and reranks: seconds).
function M.call_async(method, params, done)
  local c = M.connection()
  if c then
    M.last_transport = 'socket'
    c:request(method, params, function(err, result)
      if err and err.code == 'DISCONNECTED' then
        M.last_transport = 'cli'
        return via_cli_async(method, params, done)
      end
      done(result, err)
    end)
    return
  end
  M.last_transport = 'cli'
  via_cli_async(method, params, done)
end

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

local function one_line(text)
  return (text or ''):gsub('%s+', ' ')
end

--- Where the first word a passage matched is, so the cursor lands on the name searched
--- for: the lines after the passage's first, and the byte column (1-based) in its line
--- (a C function's name is on the line after its type: `static void` then the name),
--- past the bytes of the line a window cut from it leaves out (`offset`, its text
--- "…" first); 0, 1 without a match.
local function match_place(snippet)
  local text = snippet.text or ''
  local m = present(snippet.matches) and snippet.matches[1] or nil
  if not m or m[1] > vim.fn.strchars(text) then
    return 0, 1
  end
  local before = text:sub(1, vim.str_byteindex(text, m[1]))
  local _, lines = before:gsub('\n', '')
  local start = before:match('.*\n()') or 1 -- the byte where the match's line starts
  local offset = tonumber(snippet.offset) or 0
  if lines == 0 and offset > 0 then
    return 0, offset + #before - #'…' + 1
  end
  return lines, #before - start + 2
end

--- Quickfix items (filename, lnum, col, text) of a search or query result.
function M.items(method, result)
  local items = {}
  for _, h in ipairs(result.hits or {}) do
    local line, col, text = 1, 1, ''
    -- A query's preview marks the words matched as a search's snippet does.
    local passage = method == 'query' and h.preview or h.snippet
    if present(passage) then
      local after
      after, col = match_place(passage)
      line, text = (method == 'query' and passage.start_line or passage.line) + after, passage.text
      if present(passage.symbol) then
        text = passage.symbol .. ': ' .. text
      end
    end
    table.insert(items, {
      -- A converted document (a web page, a PDF…) is opened as the text gnod holds, whose
      -- lines its hits number (M.read_text), not as its file.
      filename = h.converted and h.uri or h.abs_path, lnum = line, col = col,
      text = string.format('%s [%.2f] %s', h.title, h.score, one_line(text)),
      user_data = { uri = h.uri },
    })
  end
  return items
end

--- Search and fill the quickfix list; returns the items (nil on error, which is shown).
--- A hybrid `query` does not wait: it says it is under way and fills the list when gnod
--- answers (`on_done(items)` then), as it may take seconds (a frozen editor, and over
--- 30 s a timeout, while gnod embedded a backlog).
function M.to_quickfix(method, query, on_done)
  local limit = method == 'query' and M.config.query_limit or M.config.limit
  local params = { query = query, limit = limit }
  if method == 'query' then
    vim.notify('gno: searching for ' .. query .. '…', vim.log.levels.INFO)
    M.call_async(method, params, function(result, err)
      local items = M.fill_quickfix(method, query, result, err)
      if on_done then
        on_done(items)
      end
    end)
    return nil
  end
  return M.fill_quickfix(method, query, M.call(method, params))
end

--- The quickfix list of a search's result (items), or the error shown (nil).
function M.fill_quickfix(method, query, result, err)
  if not result then
    vim.notify('gno: ' .. tostring(err.code) .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    return nil
  end
  local items = M.items(method, result)
  vim.fn.setqflist({}, ' ', { title = 'gno ' .. method .. ': ' .. query, items = items })
  local notes = result.notes or {}
  if #items == 0 then
    vim.notify('gno: nothing matches ' .. query .. (notes[1] and (' (' .. notes[1] .. ')') or ''), vim.log.levels.INFO)
  else
    if #notes > 0 then -- what gnod changed about the query (`searched 'kmem_cache_alloc'`), or cannot see yet
      vim.notify('gno: ' .. table.concat(notes, '; '), vim.log.levels.INFO)
    end
    if M.config.open_quickfix then
      vim.cmd('botright copen')
    end
  end
  return items
end

--- Where NAME (default: the word under the cursor) is defined: one definition is
--- opened, several fill the quickfix list. Returns the items.
function M.definition(name)
  if name == nil or name == '' then
    name = vim.fn.expand('<cword>')
  end
  local result, err = M.call('search', { query = name, symbol = true, limit = M.config.limit })
  if not result then
    vim.notify('gno: ' .. tostring(err.code) .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    return nil
  end
  local items = M.items('search', result)
  local notes = result.notes or {}
  if #items == 0 then
    local why = notes[1]
    vim.notify('gno: no definition of ' .. name .. (why and (' (' .. why .. ')') or ''), vim.log.levels.INFO)
    return items
  end
  if #notes > 0 then -- another name than the one asked for (`nothing defines 'kfree': showing 'free'`)
    vim.notify('gno: ' .. table.concat(notes, '; '), vim.log.levels.INFO)
  end
  if #items == 1 then
    M.open(items[1])
  else
    vim.fn.setqflist({}, ' ', { title = 'gno definitions: ' .. name, items = items })
    if M.config.open_quickfix then
      vim.cmd('botright copen')
    end
  end
  return items
end

--- Fill BUF, named by a converted document's gno:// URI, with the document's text as
--- gnod holds it (`get`): read-only Markdown.
function M.read_text(buf, uri)
  local result, err = M.call('get', { ref = uri })
  if not result then
    vim.notify('gno: ' .. tostring(err.code) .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    return
  end
  local text = result.content:gsub('\n$', '')
  vim.bo[buf].modifiable = true
  -- Marks kept where they are (`:lockmarks`): a quickfix entry's line is the text's, and
  -- filling the empty buffer moved it to the last line (the first jump to a hit landed there).
  vim.b[buf].gno_text = vim.split(text, '\n', { plain = true })
  vim.cmd(string.format('lockmarks call nvim_buf_set_lines(%d, 0, -1, v:false, getbufvar(%d, "gno_text"))', buf, buf))
  vim.b[buf].gno_text = nil
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.bo[buf].filetype = 'markdown'
end

--- Open a hit's file at its place. The buffer is made by name, not by `:edit`, whose
--- command line ends at a newline that a file name may hold.
function M.open(item)
  local buf = vim.fn.bufadd(item.filename)
  vim.bo[buf].buflisted = true
  vim.api.nvim_set_current_buf(buf)
  local lnum = math.min(item.lnum, vim.api.nvim_buf_line_count(0))
  local width = #vim.api.nvim_buf_get_lines(0, lnum - 1, lnum, false)[1]
  vim.api.nvim_win_set_cursor(0, { lnum, math.max(0, math.min((item.col or 1) - 1, width - 1)) })
end

return M
