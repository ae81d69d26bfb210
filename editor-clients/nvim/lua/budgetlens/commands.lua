-- User commands, vim.lsp.commands handlers and result windows. Works on Neovim 0.7 and later.
local util = require("budgetlens.util")

local M = {}

M.namespace = vim.api.nvim_create_namespace("budgetlens_hierarchy")

local function first_client(bufnr)
  return util.get_clients(bufnr)[1]
end

local function is_null(value)
  return value == nil or value == vim.NIL
end

--- Send `workspace/executeCommand` to the budgetlens client of `bufnr` (or `client_id`).
function M.execute(bufnr, command, arguments, on_result, client_id)
  local client = client_id and vim.lsp.get_client_by_id(client_id) or first_client(bufnr)
  if not client then
    util.notify("no budgetlens server is attached to this buffer", vim.log.levels.WARN)
    return false
  end
  util.request(client, "workspace/executeCommand", { command = command, arguments = arguments },
    function(err, result)
      if err then
        util.notify(string.format("%s failed: %s", command, err.message or vim.inspect(err)),
          vim.log.levels.ERROR)
        return
      end
      if on_result then
        on_result(result, client)
      end
    end, bufnr)
  return true
end

--- Show `lines` in a scratch split named `name` (reused when it is already open).
function M.open_scratch(name, lines, filetype)
  local existing = vim.fn.bufnr("^" .. vim.fn.escape(name, "\\/.*$^~[]") .. "$")
  local win = existing ~= -1 and vim.fn.bufwinid(existing) or -1
  local buf
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    buf = existing
  else
    if existing ~= -1 then
      vim.api.nvim_buf_delete(existing, { force = true })
    end
    vim.cmd("botright new")
    buf = vim.api.nvim_get_current_buf()
    win = vim.api.nvim_get_current_win()
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].swapfile = false
    pcall(vim.api.nvim_buf_set_name, buf, name)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.bo[buf].filetype = filetype
  return buf, win
end

local function split_lines(text)
  return vim.split(text or "", "\n", { plain = true })
end

--- Where the cut `marker` is in `lines`: 0-based row and byte columns, or nil. The last
--- occurrence is the cut (the text ends there; a header line may mention the marker too).
function M.find_marker(lines, marker)
  for row = #lines, 1, -1 do
    local line = lines[row]
    local start, last = nil, nil
    local from = 1
    while true do
      local found = line:find(marker, from, true)
      if not found then
        break
      end
      start, last = found, found + #marker
      from = found + 1
    end
    if start then
      return row - 1, start - 1, last - 1
    end
  end
  return nil
end

local function cut_marker(client)
  local settings = client and client.config and client.config.settings
  local section = type(settings) == "table" and settings.budgetlens or nil
  if type(section) == "table" and type(section.cutMarker) == "string" and section.cutMarker ~= "" then
    return section.cutMarker
  end
  return util.default_cut_marker
end

--- Open the result of budgetlens.showHierarchyContext: the marked text in a scratch split,
--- the cut point highlighted and the cursor on it.
function M.show_hierarchy(result, source_bufnr, client)
  if type(result) ~= "table" then
    util.notify("the server returned no hierarchy context", vim.log.levels.WARN)
    return nil
  end
  local lines = split_lines(result.text)
  local source = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(source_bufnr), ":t")
  local buf, win = M.open_scratch("budgetlens://hierarchy/" .. source, lines, "budgetlens-hierarchy")
  vim.bo[buf].syntax = "json"
  vim.api.nvim_buf_clear_namespace(buf, M.namespace, 0, -1)
  local info = { cut = result.cut, budget = result.budget, marker = vim.NIL }
  local row, first, last = M.find_marker(lines, cut_marker(client))
  if row then
    vim.api.nvim_buf_add_highlight(buf, M.namespace, "ErrorMsg", row, first, last)
    local path = not is_null(result.cut) and result.cut.path or nil
    if type(path) == "string" and path ~= "" then
      vim.api.nvim_buf_set_extmark(buf, M.namespace, row, 0, {
        virt_text = { { "  cut at " .. path, "Comment" } },
        virt_text_pos = "eol",
      })
    end
    vim.api.nvim_win_set_cursor(win, { row + 1, first })
    info.marker = { line = row, first = first, last = last }
  elseif is_null(result.cut) then
    util.notify("the JSON is complete: nothing was cut")
  end
  vim.api.nvim_buf_set_var(buf, "budgetlens_hierarchy", info)
  return buf
end

local function text_of(result)
  if type(result) == "string" then
    return result
  end
  if type(result) == "table" and type(result.text) == "string" then
    return result.text
  end
  return vim.inspect(result)
end

function M.show_report(result, source_bufnr)
  local source = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(source_bufnr), ":t")
  return M.open_scratch("budgetlens://report/" .. source, split_lines(text_of(result)),
    "budgetlens-report")
end

local function uri_args(bufnr, extra)
  local args = { uri = vim.uri_from_bufnr(bufnr) }
  for key, value in pairs(extra or {}) do
    args[key] = value
  end
  return { args }
end

--- :BudgetlensHierarchy [budget]
function M.hierarchy(bufnr, budget)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local extra = {}
  if budget ~= nil then
    extra.budget = budget
  end
  return M.execute(bufnr, "budgetlens.showHierarchyContext", uri_args(bufnr, extra),
    function(result, client)
      M.show_hierarchy(result, bufnr, client)
    end)
end

--- :BudgetlensClampAll: the server applies the clamp plan with workspace/applyEdit.
function M.clamp_all(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  return M.execute(bufnr, "budgetlens.clampAll", uri_args(bufnr), function(result)
    if type(result) == "table" and type(result.message) == "string" then
      util.notify(result.message)
    end
  end)
end

--- :BudgetlensReport
function M.report(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  return M.execute(bufnr, "budgetlens.showBudgetReport", uri_args(bufnr), function(result)
    M.show_report(result, bufnr)
  end)
end

--- Refresh the code lenses of one buffer.
function M.refresh_lenses(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  if util.has("0.10") then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  else
    vim.api.nvim_buf_call(bufnr, function()
      vim.lsp.codelens.refresh()
    end)
  end
end

local function jump_to(location, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  if vim.lsp.util.show_document then
    vim.lsp.util.show_document(location, encoding, { focus = true })
  else
    vim.lsp.util.jump_to_location(location, encoding)
  end
end

-- Handlers for commands that code lenses and code actions carry. Server commands are sent
-- back to the server (so their results are shown); location commands jump.
M.lsp_commands = {
  ["budgetlens.showHierarchyContext"] = function(command, ctx)
    M.execute(ctx.bufnr, command.command, command.arguments, function(result, client)
      M.show_hierarchy(result, ctx.bufnr, client)
    end, ctx.client_id)
  end,
  ["budgetlens.showBudgetReport"] = function(command, ctx)
    M.execute(ctx.bufnr, command.command, command.arguments, function(result)
      M.show_report(result, ctx.bufnr)
    end, ctx.client_id)
  end,
  ["budgetlens.clampAll"] = function(command, ctx)
    M.execute(ctx.bufnr, command.command, command.arguments, nil, ctx.client_id)
  end,
  -- lenses that point somewhere ({uri, range}): jump here, no round trip to the server
  ["budgetlens.showLocation"] = function(command, ctx)
    local target = command.arguments and command.arguments[1]
    if type(target) ~= "table" or type(target.uri) ~= "string" or type(target.range) ~= "table" then
      util.notify("budgetlens.showLocation needs {uri, range}", vim.log.levels.WARN)
      return
    end
    jump_to({ uri = target.uri, range = target.range }, ctx.client_id)
  end,
}

--- Handlers to give the client (workspace/codeLens/refresh is not built into 0.7-0.9).
function M.client_handlers()
  return {
    -- window/showDocument is built in from 0.8; 0.7 gets this one
    ["window/showDocument"] = not util.has("0.8") and function(_, params, ctx)
      jump_to({ uri = params.uri, range = params.selection or {
        start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } } },
        ctx.client_id)
      return { success = true }
    end or nil,
    ["workspace/codeLens/refresh"] = function(_, _, ctx)
      local buffers = {}
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if util.has("0.10") and client then
        buffers = vim.tbl_keys(client.attached_buffers or {})
      else
        buffers = vim.lsp.get_buffers_by_client_id(ctx.client_id)
      end
      for _, bufnr in ipairs(buffers) do
        M.refresh_lenses(bufnr)
      end
      return vim.NIL
    end,
  }
end

M.jump_to = jump_to

local registered = false

--- Register user commands and vim.lsp.commands handlers (idempotent).
function M.register()
  for name, handler in pairs(M.lsp_commands) do
    vim.lsp.commands[name] = handler
  end
  if registered then
    return
  end
  registered = true
  vim.api.nvim_create_user_command("BudgetlensHierarchy", function(opts)
    local budget = nil
    if opts.args ~= "" then
      budget = tonumber(opts.args)
      if not budget or budget < 0 or budget % 1 ~= 0 then
        util.notify("the budget must be a whole number >= 0, got " .. opts.args,
          vim.log.levels.ERROR)
        return
      end
    end
    M.hierarchy(0, budget)
  end, { nargs = "?", desc = "budgetlens: hierarchy context of this JSON buffer, cut point marked" })
  vim.api.nvim_create_user_command("BudgetlensClampAll", function()
    M.clamp_all(0)
  end, { desc = "budgetlens: clamp every budget of this pipeline" })
  vim.api.nvim_create_user_command("BudgetlensReport", function()
    M.report(0)
  end, { desc = "budgetlens: the step budget table of this pipeline" })
end

return M
