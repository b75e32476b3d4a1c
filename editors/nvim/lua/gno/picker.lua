-- The live picker: re-queries gnod as you type (and when files change) and opens the
-- file at the hit's line.
-- Telescope when installed; otherwise a prompt with a result list (asynchronous over
-- the socket, so typing never waits). `:GnoPick {query}` without telescope offers
-- that query's hits through vim.ui.select.
local gno = require('gno')

local M = {}
local DEBOUNCE_MS = 60
-- After gnod stopped: how long between tries to subscribe again, and how many.
local RESUBSCRIBE_MS = 500
local RESUBSCRIBE_TRIES = 20

local function label(item)
  return vim.fn.fnamemodify(item.filename, ':~:.') .. ':' .. item.lnum .. '  ' .. item.text
end

--- The query sent for what is typed, as the web page sends it (gnoctl/web/search.py):
--- the word still being typed (nothing after it yet) as a prefix, so `dock` already
--- finds docker; a quoted or negated word, one letter, a word already ending in `*` or
--- in no letter or digit (`C++`) goes as it is. A phrase being typed is closed, its last
--- word a prefix too (`"rotor imb` searches "rotor imb*": an open quote was an error at
--- every keystroke).
function M.as_typed(text)
  local _, quotes = text:gsub('"', '')
  if quotes % 2 == 1 then
    local last
    for word in text:match('.*"(.*)$'):gmatch('%S+') do
      last = word
    end
    local typing = last ~= nil and not text:sub(-1):match('%s') and not last:find('*', 1, true)
    return text:gsub('%s+$', '') .. (typing and '*' or '') .. '"'
  end
  local last = text:match('(%S+)$')
  if not last or text:sub(-1):match('%s') or last:find('["*]') or last:sub(1, 1) == '-'
      or vim.fn.strchars(last) < 2 or last:sub(-1):match('%p') then
    return text
  end
  return text .. '*'
end

local function search_now(text, typing)
  if vim.trim(text) == '' then
    return {}
  end
  local result = gno.call('search', { query = typing and M.as_typed(text) or text, limit = gno.config.limit })
  return result and gno.items('search', result) or {}
end

function M.telescope(initial)
  local pickers = require('telescope.pickers')
  local finders = require('telescope.finders')
  local sorters = require('telescope.sorters')
  local conf = require('telescope.config').values
  pickers.new({}, {
    prompt_title = 'gno',
    default_text = initial,
    finder = finders.new_dynamic({
      fn = function(text) return search_now(text, true) end,
      entry_maker = function(item)
        return { value = item, display = label(item), ordinal = label(item), filename = item.filename,
          lnum = item.lnum }
      end,
    }),
    sorter = sorters.empty(), -- gnod's ranking, not a fuzzy re-sort
    previewer = conf.grep_previewer({}),
  }):find()
end

--- `:GnoPick {query}` without telescope: the query's hits through vim.ui.select; an error,
--- no hit, or what gnod changed about the query (its notes) is said, not an empty list.
function M.select(query)
  local result, err = gno.call('search', { query = query, limit = gno.config.limit })
  if not result then
    vim.notify('gno: ' .. tostring(err.code) .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    return
  end
  local notes = table.concat(result.notes or {}, '; ')
  local items = gno.items('search', result)
  if #items == 0 then
    vim.notify('gno: nothing matches ' .. query .. (notes ~= '' and (' (' .. notes .. ')') or ''), vim.log.levels.INFO)
    return
  elseif notes ~= '' then
    vim.notify('gno: ' .. notes, vim.log.levels.INFO)
  end
  vim.ui.select(items, { prompt = 'gno: ' .. query, format_item = label }, function(choice)
    if choice then
      gno.open(choice)
    end
  end)
end

-- The built-in live prompt: a result list above a one-line prompt, both floating.
M.current = nil

local function render(state)
  if not vim.api.nvim_buf_is_valid(state.list_buf) then
    return
  end
  local lines = {}
  for _, item in ipairs(state.items) do
    table.insert(lines, label(item))
  end
  if #lines == 0 and not state.error then
    lines = { state.text == '' and 'type to search' or 'no matches' }
  end
  for _, note in ipairs(state.notes or {}) do -- what gnod changed about the query, or cannot see yet
    table.insert(lines, note)
  end
  if state.error then -- below the results it keeps
    table.insert(lines, state.error)
  end
  if state.busy then -- the list is an earlier keystroke's until the reply comes
    table.insert(lines, 'searching…')
  end
  vim.api.nvim_buf_set_lines(state.list_buf, 0, -1, false, lines)
  vim.api.nvim_buf_clear_namespace(state.list_buf, state.ns, 0, -1)
  if #state.items > 0 then
    vim.api.nvim_buf_add_highlight(state.list_buf, state.ns, 'Visual', state.selected - 1, 0, -1)
  end
end

--- Ask gnod for `text`. One search at a time: keystrokes typed while it runs are not
--- queued behind it (a slow query each, they showed the list seconds late), the reply
--- asks for what is typed by then. A query gnod rejects (punctuation alone) keeps the
--- last results, with the reason; the reply's notes show below
--- its hits (`mutex_l*`: the `*` of one letter is text, `mutex` was searched alone).
function M.update(state, text)
  state.text = text
  local function show(result, err)
    if err then
      state.error = tostring(err.message or err.code)
    else
      local notes = result and result.notes
      state.items, state.selected, state.error = result and gno.items('search', result) or {}, 1, nil
      state.notes = (notes and notes ~= vim.NIL) and notes or {}
    end
    state.shown = text
    render(state)
    if state.accepting then
      M.accept(state)
    end
  end
  if vim.trim(text) == '' then
    show(nil)
    return
  end
  local c = gno.connection()
  if c and state.busy then
    render(state)
    return
  end
  local params = { query = M.as_typed(text), limit = gno.config.limit }
  if not c then
    local result, err = gno.call('search', params)
    show(result, not result and err or nil)
    return
  end
  state.busy = true
  render(state)
  c:request('search', params, function(err, result)
    state.busy = false
    if M.current ~= state then
      return
    end
    if state.text ~= text then
      M.update(state, state.text)
    else
      show(not err and result or nil, err)
    end
  end)
end

local function prompt_text(state)
  local line = vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or ''
  return line:sub(#state.prefix + 1)
end

--- Live updates: a saved, added or deleted file re-runs the current search, over a
--- connection of the picker's own (closing the picker ends the subscription). When gnod
--- stops (a restart), another is made once it is back, up to RESUBSCRIBE_TRIES times
--- RESUBSCRIBE_MS apart, and the list is searched again for what changed meanwhile
--- (the refresh stopped for good after `gnoctl daemon restart`).
local function subscribe(state, tries)
  if M.current ~= state then
    return
  end
  local rpc = require('gno.rpc')
  local watch = rpc.connect(gno.config.socket or rpc.socket_path(), 200)
  if not watch then
    if tries > 0 then
      vim.defer_fn(function() subscribe(state, tries - 1) end, RESUBSCRIBE_MS)
    end
    return
  end
  state.watch = watch
  local refresh = nil
  local function again()
    if refresh then
      refresh:stop()
    end
    refresh = vim.defer_fn(function() M.update(state, state.text) end, DEBOUNCE_MS)
  end
  watch.on_close = function()
    if M.current == state then -- gnod stopped, not the picker
      vim.defer_fn(function() subscribe(state, RESUBSCRIBE_TRIES) end, RESUBSCRIBE_MS)
    end
  end
  watch:request('watch', vim.empty_dict(), function() end, again)
  if state.subscribed then -- again, after gnod came back
    again()
  end
  state.subscribed = true
end

function M.close(state)
  if state.watch then
    state.watch:close()
  end
  for _, win in ipairs({ state.prompt_win, state.list_win }) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  vim.cmd('stopinsert')
  M.current = nil
end

function M.move(state, delta)
  if #state.items > 0 then
    state.selected = (state.selected - 1 + delta) % #state.items + 1
    render(state)
  end
end

--- Open the selected hit; typed on since the list was shown, the hit is the new
--- query's first, once its reply comes.
function M.accept(state)
  local typed = vim.api.nvim_buf_is_valid(state.prompt_buf) and prompt_text(state) or state.text
  if state.shown ~= typed and vim.trim(typed) ~= '' then
    state.accepting = true
    if typed ~= state.text then
      M.update(state, typed)
    end
    return
  end
  local item = state.items[state.selected]
  M.close(state)
  if item then
    -- Once insert mode has ended: leaving it moves the cursor a column left.
    vim.schedule(function() gno.open(item) end)
  end
end

function M.prompt(initial)
  local width = math.max(40, math.floor(vim.o.columns * 0.8))
  local height = math.max(5, math.floor(vim.o.lines * 0.5))
  local col = math.floor((vim.o.columns - width) / 2)
  local state = { items = {}, selected = 1, text = '', prefix = 'gno> ',
    ns = vim.api.nvim_create_namespace('gno_picker') }
  state.list_buf = vim.api.nvim_create_buf(false, true)
  state.list_win = vim.api.nvim_open_win(state.list_buf, false, { relative = 'editor', row = 1, col = col,
    width = width, height = height, style = 'minimal', border = 'rounded' })
  state.prompt_buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_option(state.prompt_buf, 'buftype', 'prompt')
  vim.fn.prompt_setprompt(state.prompt_buf, state.prefix)
  state.prompt_win = vim.api.nvim_open_win(state.prompt_buf, true, { relative = 'editor', row = height + 3,
    col = col, width = width, height = 1, style = 'minimal', border = 'rounded' })
  local timer = nil
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, {
    buffer = state.prompt_buf,
    callback = function()
      if timer then
        timer:stop()
      end
      timer = vim.defer_fn(function() M.update(state, prompt_text(state)) end, DEBOUNCE_MS)
    end,
  })
  local function map(lhs, fn)
    vim.keymap.set({ 'i', 'n' }, lhs, fn, { buffer = state.prompt_buf })
  end
  map('<CR>', function() M.accept(state) end)
  map('<C-n>', function() M.move(state, 1) end)
  map('<Down>', function() M.move(state, 1) end)
  map('<C-p>', function() M.move(state, -1) end)
  map('<Up>', function() M.move(state, -1) end)
  map('<Esc>', function() M.close(state) end)
  map('<C-c>', function() M.close(state) end)
  M.current = state
  if gno.connection() then
    subscribe(state, 0)
  end
  render(state)
  vim.cmd('startinsert!')
  if initial and initial ~= '' then
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { state.prefix .. initial })
    M.update(state, initial)
  end
  return state
end

function M.pick(initial)
  if pcall(require, 'telescope') then
    M.telescope(initial)
  elseif initial and initial ~= '' then
    M.select(initial)
  else
    M.prompt(initial)
  end
end

return M
