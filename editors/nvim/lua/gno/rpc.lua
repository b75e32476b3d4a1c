-- gnod's socket protocol from Neovim (docs/protocol.md): one persistent connection,
-- frames of a 4-byte big-endian length + UTF-8 JSON, replies matched on id.
-- Works on Neovim 0.7+ (LuaJIT's `bit`, vim.loop, vim.json).
local uv = vim.loop
local M = {}

local PROTOCOL = 1

--- Where gnod listens: GNO_HOME, else XDG_RUNTIME_DIR, else the temp dir (per user).
function M.socket_path()
  local home = vim.env.GNO_HOME
  if home and home ~= '' then
    return home .. '/run/gnod.sock'
  end
  local xdg = vim.env.XDG_RUNTIME_DIR
  if xdg and xdg ~= '' then
    return xdg .. '/gno/gnod.sock'
  end
  local tmp = vim.env.TMPDIR
  if not tmp or tmp == '' then
    tmp = '/tmp'
  end
  return tmp:gsub('/$', '') .. '/gno-' .. uv.getuid() .. '/gnod.sock'
end

local function header(n)
  return string.char(bit.band(bit.rshift(n, 24), 255), bit.band(bit.rshift(n, 16), 255),
    bit.band(bit.rshift(n, 8), 255), bit.band(n, 255))
end

local function size_of(buf)
  local a, b, c, d = buf:byte(1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local Conn = {}
Conn.__index = Conn

--- Connect (blocking up to `timeout_ms`); nil and the reason when gnod is not there.
function M.connect(path, timeout_ms)
  local pipe = uv.new_pipe(false)
  local done, failure = false, nil
  pipe:connect(path, function(err)
    failure, done = err, true
  end)
  vim.wait(timeout_ms or 1000, function() return done end, 5)
  if not done or failure then
    pipe:close()
    return nil, failure or 'timed out connecting to ' .. path
  end
  -- `on_close(reason)`, set by a subscription's owner: called on the main loop once the
  -- connection is gone (gnod stopped, or closed here).
  local self = setmetatable({ pipe = pipe, buf = '', next_id = 0, pending = {}, listeners = {}, closed = false },
    Conn)
  pipe:read_start(function(err, data)
    if err or not data then
      self:_close(err or 'gnod closed the connection')
      return
    end
    self.buf = self.buf .. data
    while #self.buf >= 4 do
      local n = size_of(self.buf)
      if #self.buf < 4 + n then
        break
      end
      local body = self.buf:sub(5, 4 + n)
      self.buf = self.buf:sub(5 + n)
      vim.schedule(function() self:_dispatch(vim.json.decode(body)) end)
    end
  end)
  return self
end

function Conn:_close(reason)
  if self.closed then
    return
  end
  self.closed = true
  pcall(function() self.pipe:read_stop() end)
  if not self.pipe:is_closing() then
    self.pipe:close()
  end
  vim.schedule(function()
    for id, cb in pairs(self.pending) do
      self.pending[id] = nil
      cb({ code = 'DISCONNECTED', message = tostring(reason) }, nil)
    end
    if self.on_close then -- a subscription's owner, whose call was answered long ago
      self.on_close(reason)
    end
  end)
end

function Conn:_dispatch(msg)
  if msg.id ~= nil and msg.id ~= vim.NIL then
    local cb = self.pending[msg.id]
    self.pending[msg.id] = nil
    if not cb then
      return
    end
    if msg.error then
      local data = msg.error.data
      cb({ code = (data and data ~= vim.NIL and data.name) or msg.error.code, message = msg.error.message }, nil)
    else
      cb(nil, msg.result)
    end
  elseif msg.method then
    local listener = self.listeners[msg.params and msg.params.id]
    if listener then
      listener(msg.method, msg.params)
    end
  end
end

--- Send a request; `cb(err, result)` runs on the main loop. `on_notify(method, params)`
--- gets the call's notifications (progress, token, change, lagged). Returns the id.
function Conn:request(method, params, cb, on_notify)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.pending[id] = cb
  if on_notify then
    self.listeners[id] = on_notify
  end
  local body = vim.json.encode({ jsonrpc = '2.0', id = id, method = method, params = params or vim.empty_dict(),
    gno = PROTOCOL })
  self.pipe:write(header(#body) .. body)
  return id
end

--- Blocking call (the editor waits at most `timeout_ms`): result, or nil and an error table.
function Conn:call(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r)
    err, result, done = e, r, true
  end)
  if not vim.wait(timeout_ms or 30000, function() return done end, 2) then
    return nil, { code = 'TIMEOUT', message = method .. ' took longer than ' .. (timeout_ms or 30000) .. ' ms' }
  end
  return result, err
end

function Conn:close()
  self:_close('closed')
end

return M
