-- Real-client flow in headless Neovim (issue 4, point 2), with Neovim's own LSP client:
-- vim.lsp.start_client + vim.lsp.buf_attach_client, no plugin. Every observation is recorded
-- to the results file; tests/clients/nvim/test_nvim_client.py asserts on it.
local H = require("nvim_harness")

local OVER = os.getenv("BUDGETLENS_NVIM_PIPELINE")
local TRUNCATED = os.getenv("BUDGETLENS_NVIM_TRUNCATED")
local TIMEOUT = tonumber(os.getenv("BUDGETLENS_TEST_WAIT_MS")) or 30000  -- a hang guard

-- client.request became a method in 0.11 (this test targets Debian's 0.7.2, runs on newer too)
local function request(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

H.run(function()
  local ws = H.workspace
  local published = {} -- uri -> list of raw publishDiagnostics params, in arrival order

  local function on_publish(err, result, ctx, config)
    published[result.uri] = published[result.uri] or {}
    table.insert(published[result.uri], result)
    return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
  end

  local function latest(uri)
    local list = published[uri]
    return list and list[#list] or nil
  end

  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/" .. OVER))
  local bufnr = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(bufnr)
  local client_id = vim.lsp.start_client({
    name = "budgetlens",
    cmd = { "budgetlens", "serve" },
    root_dir = ws,
    workspace_folders = { { uri = vim.uri_from_fname(ws), name = "workspace" } },
    handlers = { ["textDocument/publishDiagnostics"] = on_publish },
  })
  assert(client_id, "vim.lsp.start_client returned nil")
  assert(vim.lsp.buf_attach_client(bufnr, client_id), "buf_attach_client failed")
  local client = vim.lsp.get_client_by_id(client_id)
  H.record("server_pid", client.rpc and client.rpc.pid or vim.NIL)
  H.record("nvim_version", vim.version())

  -- 1. the budget diagnostic arrives (as Neovim shows it: vim.diagnostic)
  H.wait(TIMEOUT, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, "diagnostics on " .. OVER)
  H.record("offset_encoding", client.offset_encoding)
  H.record("diagnostics", H.plain_diagnostics(latest(uri).diagnostics))
  local shown = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(shown, { lnum = d.lnum, col = d.col, end_col = d.end_col, severity = d.severity,
      message = d.message, code = d.code })
  end
  H.record("shown_diagnostics", shown)
  H.record("lines_before", vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))

  -- 2. the code lenses, through vim.lsp.codelens
  vim.lsp.codelens.refresh()
  H.wait(TIMEOUT, function()
    return #vim.lsp.codelens.get(bufnr) > 0
  end, "code lenses")
  local lenses = {}
  for _, lens in ipairs(vim.lsp.codelens.get(bufnr)) do
    table.insert(lenses, { line = lens.range.start.line,
      title = lens.command and lens.command.title or vim.NIL,
      command = lens.command and lens.command.command or vim.NIL })
  end
  H.record("lenses", lenses)

  -- 3. the quick-fix for the budget error, applied with vim.lsp.util.apply_workspace_edit
  local budget_error = nil
  for _, d in ipairs(latest(uri).diagnostics) do
    if d.severity == 1 and type(d.code) == "string" and d.code:match("^BL") then
      budget_error = d
      break
    end
  end
  assert(budget_error, "no BL error diagnostic among " .. vim.inspect(latest(uri).diagnostics))
  H.record("budget_error", budget_error)
  local actions = nil
  request(client, "textDocument/codeAction", {
    textDocument = { uri = uri },
    range = budget_error.range,
    context = { diagnostics = { budget_error }, only = { "quickfix" } },
  }, function(err, result)
    actions = err and { error = err } or (result or {})
  end, bufnr)
  H.wait(TIMEOUT, function()
    return actions ~= nil
  end, "code actions")
  assert(not actions.error, "codeAction failed: " .. vim.inspect(actions.error))
  local titles = {}
  local chosen = nil
  for _, action in ipairs(actions) do
    table.insert(titles, { title = action.title, kind = action.kind or vim.NIL })
    if not chosen and action.edit and (action.kind or ""):match("^quickfix") then
      chosen = action
    end
    if action.edit and action.title:match("max_context_tokens") and
        not (chosen and chosen.title:match("max_context_tokens")) then
      chosen = action
    end
  end
  H.record("actions", titles)
  assert(chosen, "no quick-fix with an edit among " .. vim.inspect(titles))
  H.record("chosen_action", { title = chosen.title, edit = chosen.edit })
  local publishes_before = #published[uri]
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  -- buffers the edit touched that the client does not know yet are attached (didOpen with
  -- the edited text); the pipeline's own buffer sends didChange by itself
  local touched = {}
  for _, change in ipairs(chosen.edit.documentChanges or {}) do
    touched[change.textDocument.uri] = true
  end
  for edit_uri, _ in pairs(chosen.edit.changes or {}) do
    touched[edit_uri] = true
  end
  for edit_uri, _ in pairs(touched) do
    local edited = vim.uri_to_bufnr(edit_uri)
    if not vim.lsp.buf_is_attached(edited, client_id) then
      vim.lsp.buf_attach_client(edited, client_id)
    end
  end
  H.record("touched", vim.tbl_keys(touched))
  H.record("lines_after", vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))

  -- 4. the diagnostic clears
  H.wait(TIMEOUT, function()
    if #published[uri] <= publishes_before then
      return false
    end
    for _, d in ipairs(latest(uri).diagnostics) do
      if d.code == budget_error.code and d.severity == 1 then
        return false
      end
    end
    return true
  end, "the budget diagnostic to clear")
  H.record("diagnostics_after", H.plain_diagnostics(latest(uri).diagnostics))
  local errors_shown = vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.ERROR })
  H.record("errors_shown_after", #errors_shown)

  -- 5. the hierarchy command on a truncated JSON file (unsaved buffer text is what counts)
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/" .. TRUNCATED))
  local json_buf = vim.api.nvim_get_current_buf()
  local json_uri = vim.uri_from_bufnr(json_buf)
  assert(vim.lsp.buf_attach_client(json_buf, client_id), "buf_attach_client (json) failed")
  H.wait(TIMEOUT, function()
    return latest(json_uri) ~= nil and #latest(json_uri).diagnostics > 0
  end, "the cut-point diagnostic on " .. TRUNCATED)
  H.record("json_diagnostics", H.plain_diagnostics(latest(json_uri).diagnostics))
  local hierarchy = nil
  request(client, "workspace/executeCommand", {
    command = "budgetlens.showHierarchyContext",
    arguments = { { uri = json_uri } },
  }, function(err, result)
    hierarchy = err and { error = err } or { result = result }
  end, json_buf)
  H.wait(TIMEOUT, function()
    return hierarchy ~= nil
  end, "budgetlens.showHierarchyContext")
  assert(not hierarchy.error, "showHierarchyContext failed: " .. vim.inspect(hierarchy.error))
  H.record("hierarchy", hierarchy.result)
end)
