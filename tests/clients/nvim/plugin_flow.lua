-- The Neovim plugin end to end (issue 5, point 3): the user config is plugin_init.lua
-- (editor-clients/nvim on the runtimepath, require("budgetlens").setup{}); nothing here starts
-- or attaches a client by hand. Observations go to the results file for test_nvim_plugin.py.
local H = require("nvim_harness")

local OVER = os.getenv("BUDGETLENS_NVIM_PIPELINE")
local OTHER = os.getenv("BUDGETLENS_NVIM_OTHER_PIPELINE")
local PROMPT = os.getenv("BUDGETLENS_NVIM_PROMPT")
local TRUNCATED = os.getenv("BUDGETLENS_NVIM_TRUNCATED")
local TIMEOUT = tonumber(os.getenv("BUDGETLENS_TEST_WAIT_MS")) or 30000  -- a hang guard

local function clients_of(bufnr)
  local ids = {}
  for _, client in ipairs(require("budgetlens.util").get_clients(bufnr)) do
    table.insert(ids, client.id)
  end
  return ids
end

local function edit(rel)
  vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/" .. rel))
  return vim.api.nvim_get_current_buf()
end

local function wait_scratch(prefix, what)
  H.wait(TIMEOUT, function()
    return vim.api.nvim_buf_get_name(0):find(prefix, 1, true) ~= nil
  end, what)
  return vim.api.nvim_get_current_buf()
end

H.run(function()
  H.record("setup_called", package.loaded["budgetlens"] ~= nil and
    require("budgetlens").config ~= nil)
  H.record("user_commands", {
    hierarchy = vim.fn.exists(":BudgetlensHierarchy"),
    clamp_all = vim.fn.exists(":BudgetlensClampAll"),
    report = vim.fn.exists(":BudgetlensReport"),
  })

  -- diagnostics arrive on the over-budget pipeline, through the plugin's own attach
  local pipeline = edit(OVER)
  H.wait(TIMEOUT, function()
    return #clients_of(pipeline) == 1
  end, "the plugin to attach a budgetlens client")
  local client = vim.lsp.get_client_by_id(clients_of(pipeline)[1])
  H.record("server_pid", client.rpc and client.rpc.pid or vim.NIL)
  H.record("root_dir", client.config.root_dir)
  H.wait(TIMEOUT, function()
    return #vim.diagnostic.get(pipeline, { severity = vim.diagnostic.severity.ERROR }) > 0
  end, "an error diagnostic on " .. OVER)
  local shown = {}
  for _, d in ipairs(vim.diagnostic.get(pipeline)) do
    table.insert(shown, { lnum = d.lnum, col = d.col, severity = d.severity,
      message = d.message, code = d.code or vim.NIL })
  end
  H.record("diagnostics", shown)

  -- lenses come from the plugin's refresh (on attach / BufEnter), not from this script
  H.wait(TIMEOUT, function()
    return #vim.lsp.codelens.get(pipeline) > 0
  end, "code lenses refreshed by the plugin")
  local lenses = {}
  for _, lens in ipairs(vim.lsp.codelens.get(pipeline)) do
    table.insert(lenses, { line = lens.range.start.line,
      title = lens.command and lens.command.title or vim.NIL,
      command = lens.command and lens.command.command or vim.NIL,
      arguments = lens.command and lens.command.arguments or vim.NIL })
  end
  H.record("lenses", lenses)

  -- one client per root: a second pipeline and a prompt file reuse it; a .txt outside the
  -- prompts folder is not attached
  local other = edit(OTHER)
  local prompt = edit(PROMPT)
  vim.fn.writefile({ "notes" }, H.workspace .. "/notes.txt")
  local notes = edit("notes.txt")
  H.wait(TIMEOUT, function()
    return #clients_of(other) == 1 and #clients_of(prompt) == 1
  end, "the second pipeline and the prompt file to attach")
  H.record("attached", {
    other = clients_of(other),
    prompt = clients_of(prompt),
    notes = clients_of(notes),
    first = client.id,
  })

  -- code lenses that carry commands run (vim.lsp.codelens.run on their line): one that the
  -- server answers (the budget report) and one that points somewhere (the tightest step)
  local runs = {}
  for _, wanted in ipairs({ "budgetlens.showBudgetReport", "budgetlens.showLocation" }) do
    vim.cmd("only")
    vim.api.nvim_set_current_buf(pipeline)
    local target = nil
    for _, lens in ipairs(vim.lsp.codelens.get(pipeline)) do
      if lens.command and lens.command.command == wanted then
        target = lens
        break
      end
    end
    assert(target, "no code lens carries " .. wanted .. ": " .. vim.inspect(lenses))
    vim.ui.select = function(items, opts, on_choice)
      for i, item in ipairs(items) do
        if (opts.format_item and opts.format_item(item) or item) == target.command.title then
          return on_choice(item, i)
        end
      end
      on_choice(nil, nil)
    end
    vim.api.nvim_win_set_cursor(0, { target.range.start.line + 1, 0 })
    local before = { buf = vim.api.nvim_get_current_buf(),
      cursor = vim.api.nvim_win_get_cursor(0), windows = #vim.api.nvim_list_wins() }
    vim.lsp.codelens.run()
    H.wait(TIMEOUT, function()
      local now = vim.api.nvim_win_get_cursor(0)
      return vim.api.nvim_get_current_buf() ~= before.buf or now[1] ~= before.cursor[1]
        or now[2] ~= before.cursor[2] or #vim.api.nvim_list_wins() ~= before.windows
    end, "the lens command " .. wanted .. " to have an effect")
    table.insert(runs, {
      title = target.command.title,
      command = target.command.command,
      line = target.range.start.line,
      buffer = vim.api.nvim_buf_get_name(0),
      windows = #vim.api.nvim_list_wins() - before.windows,
      cursor = vim.api.nvim_win_get_cursor(0),
      line_text = vim.api.nvim_get_current_line(),
      lines = vim.api.nvim_buf_get_lines(0, 0, 40, false),
    })
  end
  H.record("lens_runs", runs)
  vim.cmd("only")

  -- :BudgetlensReport
  vim.api.nvim_set_current_buf(pipeline)
  vim.cmd("BudgetlensReport")
  local report = wait_scratch("budgetlens://report/", ":BudgetlensReport")
  H.record("report", vim.api.nvim_buf_get_lines(report, 0, -1, false))
  vim.cmd("only")

  -- :BudgetlensHierarchy on the truncated JSON: scratch split, cut highlighted, cursor on it
  local json = edit(TRUNCATED)
  H.wait(TIMEOUT, function()
    return #clients_of(json) == 1
  end, "the plugin to attach the JSON buffer")
  local windows_before = #vim.api.nvim_list_wins()
  vim.cmd("BudgetlensHierarchy")
  local scratch = wait_scratch("budgetlens://hierarchy/", ":BudgetlensHierarchy")
  local marks = vim.api.nvim_buf_get_extmarks(scratch, require("budgetlens.commands").namespace,
    0, -1, { details = true })
  local highlights = {}
  for _, mark in ipairs(marks) do
    table.insert(highlights, { row = mark[2], col = mark[3],
      end_col = mark[4].end_col or vim.NIL, hl_group = mark[4].hl_group or vim.NIL,
      virt_text = mark[4].virt_text or vim.NIL })
  end
  local cursor = vim.api.nvim_win_get_cursor(0)
  H.record("hierarchy", {
    windows_before = windows_before,
    windows_after = #vim.api.nvim_list_wins(),
    lines = vim.api.nvim_buf_get_lines(scratch, 0, -1, false),
    cursor = cursor,
    cursor_line = vim.api.nvim_get_current_line(),
    highlights = highlights,
    buftype = vim.bo[scratch].buftype,
    modifiable = vim.bo[scratch].modifiable,
    info = vim.api.nvim_buf_get_var(scratch, "budgetlens_hierarchy"),
    clients = clients_of(scratch),
  })
  vim.cmd("only")

  -- :BudgetlensHierarchy 0: the same command with a budget argument (summary mode)
  vim.api.nvim_set_current_buf(json)
  vim.cmd("BudgetlensHierarchy 0")
  H.wait(TIMEOUT, function()
    local ok, info = pcall(vim.api.nvim_buf_get_var, 0, "budgetlens_hierarchy")
    return ok and info.budget == 0
  end, ":BudgetlensHierarchy 0")
  H.record("hierarchy_zero", vim.api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("only")

  -- :BudgetlensClampAll on the pipeline: the server's workspace/applyEdit clamps the budgets
  vim.api.nvim_set_current_buf(pipeline)
  vim.cmd("BudgetlensClampAll")
  H.wait(TIMEOUT, function()
    return vim.bo[pipeline].modified and
      #vim.diagnostic.get(pipeline, { severity = vim.diagnostic.severity.ERROR }) == 0
  end, ":BudgetlensClampAll to clamp and the error to clear")
  H.record("clamped_lines", vim.api.nvim_buf_get_lines(pipeline, 0, -1, false))

  -- code-lens refresh autocmds of the buffer, and the lenses after the clamp
  local events = {}
  for _, autocmd in ipairs(vim.api.nvim_get_autocmds({
      group = "budgetlens_codelens_" .. pipeline, buffer = pipeline })) do
    table.insert(events, autocmd.event)
  end
  table.sort(events)
  H.record("lens_autocmds", events)
  vim.cmd("doautocmd InsertLeave")
  H.wait(TIMEOUT, function()
    for _, lens in ipairs(vim.lsp.codelens.get(pipeline)) do
      if lens.command and lens.command.title:find("(0 free)", 1, true) then
        return true
      end
    end
    return false
  end, "the lenses to show the clamped budget")
  local after = {}
  for _, lens in ipairs(vim.lsp.codelens.get(pipeline)) do
    table.insert(after, lens.command and lens.command.title or vim.NIL)
  end
  H.record("lenses_after_clamp", after)

  -- misuse gets a clear message, not an error: a bad budget, a buffer no server serves
  local notes_seen = {}
  vim.notify = function(message, level)
    table.insert(notes_seen, { message = message, level = level })
  end
  vim.api.nvim_set_current_buf(json)
  vim.cmd("BudgetlensHierarchy lots")
  vim.api.nvim_set_current_buf(notes)
  vim.cmd("BudgetlensHierarchy")
  vim.cmd("BudgetlensReport")
  H.record("misuse", notes_seen)
end)
