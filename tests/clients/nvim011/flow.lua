-- Neovim 0.11 end to end, like a user: open files, hover, pick a quick-fix from
-- vim.lsp.buf.code_action(), run the hierarchy quick-fix of a truncated JSON. The client was
-- configured by init_plugin.lua (setup{}) or init_enable.lua (vim.lsp.enable); nothing here
-- starts a client or refreshes lenses. Observations go to the results file for test_nvim011.py.
local H = require("nvim_harness")

local PIPELINE = "pipelines/long_report.yaml"
local TRUNCATED = "responses/truncated.json"
local TIMEOUT = tonumber(os.getenv("BUDGETLENS_TEST_WAIT_MS")) or 30000  -- a hang guard

local function edit(rel)
  vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/" .. rel))
  return vim.api.nvim_get_current_buf()
end

local function client_of(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = "budgetlens" })[1]
end

local function shown(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out, { lnum = d.lnum, col = d.col, severity = d.severity, message = d.message,
      code = d.code or vim.NIL })
  end
  return out
end

local function has_code(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then
      return d
    end
  end
  return nil
end

local function lens_titles(bufnr)
  local titles = {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
    if lens.command then
      table.insert(titles, lens.command.title)
    end
  end
  return titles
end

--- vim.lsp.buf.code_action() with vim.ui.select answered by `choose(titles)`; returns the
--- titles offered.
local function pick_action(choose)
  local offered = nil
  local original = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    offered = {}
    for _, item in ipairs(items) do
      table.insert(offered, item.action.title)
    end
    local i = choose(offered)
    vim.ui.select = original
    on_choice(i and items[i] or nil, i)
  end
  vim.lsp.buf.code_action()
  H.wait(TIMEOUT, function()
    return offered ~= nil
  end, "the code actions to be offered")
  return offered
end

local function floating_lines()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      local buf = vim.api.nvim_win_get_buf(win)
      return vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.bo[buf].filetype
    end
  end
  return nil
end

H.run(function()
  H.record("nvim_version", tostring(vim.version()))
  H.record("plugin_loaded", vim.g.loaded_budgetlens == 1)

  -- diagnostics: BL050 on the over-budget pipeline
  local pipeline = edit(PIPELINE)
  H.wait(TIMEOUT, function()
    return client_of(pipeline) ~= nil
  end, "a budgetlens client to attach to " .. PIPELINE)
  local client = client_of(pipeline)
  H.record("server_pid", client.rpc and client.rpc.pid or vim.NIL)
  H.record("init_options", client.config.init_options or vim.NIL)
  H.record("codelens_refresh_support",
    vim.tbl_get(client.capabilities, "workspace", "codeLens", "refreshSupport") or false)
  H.wait(TIMEOUT, function()
    return has_code(pipeline, "BL050") ~= nil
  end, "BL050 on " .. PIPELINE)
  H.record("pipeline_diagnostics", shown(pipeline))

  -- lenses, refreshed by the client configuration (not by this script)
  H.wait(TIMEOUT, function()
    return #lens_titles(pipeline) > 0
  end, "code lenses")
  H.record("lenses_before", lens_titles(pipeline))

  -- hover on max_context_tokens (line 5), shown in a floating window
  vim.api.nvim_win_set_cursor(0, { 5, 4 })
  vim.lsp.buf.hover()
  H.wait(TIMEOUT, function()
    return floating_lines() ~= nil
  end, "the hover window")
  local hover_lines, hover_ft = floating_lines()
  H.record("hover", { lines = hover_lines, filetype = hover_ft })
  vim.cmd("fclose!")

  -- the quick-fix of BL050, offered on the diagnostic's line and applied
  local bl050 = has_code(pipeline, "BL050")
  vim.api.nvim_win_set_cursor(0, { bl050.lnum + 1, bl050.col })
  local offered = pick_action(function(titles)
    for i, title in ipairs(titles) do
      if title:find("^Clamp max_context_tokens") then
        return i
      end
    end
    return nil
  end)
  H.record("quickfixes_bl050", offered)
  H.wait(TIMEOUT, function()
    return has_code(pipeline, "BL050") == nil and vim.bo[pipeline].modified
  end, "the quick-fix to clear BL050")
  H.record("pipeline_after_fix", { diagnostics = shown(pipeline),
    lines = vim.api.nvim_buf_get_lines(pipeline, 0, -1, false) })
  -- the lenses follow the fix without :w, InsertLeave or BufEnter
  H.wait(TIMEOUT, function()
    for _, title in ipairs(lens_titles(pipeline)) do
      if title:find("(0 free)", 1, true) then
        return true
      end
    end
    return false
  end, "the lenses to show the clamped budget")
  H.record("lenses_after_fix", lens_titles(pipeline))

  -- BL200 on the truncated JSON; its quick-fix shows the hierarchy context
  local json = edit(TRUNCATED)
  H.wait(TIMEOUT, function()
    return has_code(json, "BL200") ~= nil
  end, "BL200 on " .. TRUNCATED)
  H.record("json_diagnostics", shown(json))
  local bl200 = has_code(json, "BL200")
  vim.api.nvim_win_set_cursor(0, { bl200.lnum + 1, 0 })
  local offered_json = pick_action(function(titles)
    for i, title in ipairs(titles) do
      if title:find("hierarchy", 1, true) then
        return i
      end
    end
    return nil
  end)
  H.record("quickfixes_bl200", offered_json)
  H.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_name(0):find("budgetlens://hierarchy/", 1, true) ~= nil
  end, "the hierarchy context to be shown")
  H.record("hierarchy", { name = vim.api.nvim_buf_get_name(0),
    lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
    cursor_line = vim.api.nvim_get_current_line() })
  vim.cmd("only")
  H.record("buffers", vim.tbl_map(function(b)
    return vim.api.nvim_buf_get_name(b)
  end, vim.api.nvim_list_bufs()))
end)
