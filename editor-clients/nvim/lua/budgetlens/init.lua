-- budgetlens for Neovim: require("budgetlens").setup(opts). Works on Neovim 0.7 and later
-- (vim.lsp.start_client + buf_attach_client on 0.7, vim.lsp.start on 0.8+). On 0.11+ the
-- lsp/budgetlens.lua config with vim.lsp.enable("budgetlens") is an alternative.
local util = require("budgetlens.util")
local commands = require("budgetlens.commands")

local M = {}

M.defaults = {
  -- the server command; `budgetlens` must be on PATH (a venv's bin folder), or give a full path
  cmd = util.default_cmd,
  -- buffers to serve: YAML and JSON inside a root, and prompt files (*.txt in the prompts folder)
  filetypes = util.default_filetypes,
  -- a workspace root is the nearest folder holding one of these
  root_markers = util.default_root_markers,
  -- sent as initializationOptions and answered to workspace/configuration (section "budgetlens")
  settings = { budgetlens = {} },
  -- refresh code lenses on BufEnter, InsertLeave and BufWritePost
  codelens = true,
  capabilities = nil,
  on_attach = nil,
}

M.config = nil
local clients_by_root = {}
local augroup = nil
local warned_missing = false

local function lens_autocmds(bufnr)
  local group = vim.api.nvim_create_augroup("budgetlens_codelens_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      commands.refresh_lenses(bufnr)
    end,
  })
  commands.refresh_lenses(bufnr)
end

--- Code-lens refresh autocmds for one buffer (idempotent).
M.on_attach_lenses = lens_autocmds

--- Per-buffer setup once a budgetlens client is attached (also used by plugin/ on 0.11+).
function M.on_attach(client, bufnr, codelens)
  if codelens ~= false then
    lens_autocmds(bufnr)
  end
  local user = M.config and M.config.on_attach
  if user then
    user(client, bufnr)
  end
end

local function client_config(root)
  local config = M.config
  local capabilities = config.capabilities or vim.lsp.protocol.make_client_capabilities()
  capabilities = vim.tbl_deep_extend("force", capabilities,
    { workspace = { codeLens = { refreshSupport = true } } })
  return {
    name = util.name,
    cmd = config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    settings = util.objects(config.settings),
    -- displaysCommandResults: this plugin shows the results of showHierarchyContext and
    -- showBudgetReport itself (commands.lua), so the server does not open a view
    init_options = vim.tbl_extend("force", util.objects(config.settings.budgetlens or config.settings),
      { displaysCommandResults = true }),
    capabilities = capabilities,
    handlers = commands.client_handlers(),
    on_attach = function(client, bufnr)
      M.on_attach(client, bufnr, config.codelens)
    end,
  }
end

local function live(client_id)
  return client_id ~= nil and vim.lsp.get_client_by_id(client_id) ~= nil
end

--- Attach budgetlens to `bufnr` when it belongs to a workspace; one client per root.
--- Returns the client id, or nil when the buffer is not served.
function M.attach(bufnr)
  if not M.config then
    M.setup({})
  end
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root = util.root_for_buffer(bufnr, M.config.root_markers, M.config.filetypes)
  if not root then
    return nil
  end
  local client_id = clients_by_root[root]
  if live(client_id) then
    vim.lsp.buf_attach_client(bufnr, client_id)
    return client_id
  end
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    if not warned_missing then
      warned_missing = true
      util.notify(string.format(
        "`%s` was not found on PATH. Install budgetlens (pip install <budgetlens checkout>) or set "
          .. "cmd in require('budgetlens').setup{ cmd = { '/path/to/budgetlens', 'serve' } }.",
        M.config.cmd[1]), vim.log.levels.ERROR)
    end
    return nil
  end
  local config = client_config(root)
  if vim.lsp.start then
    client_id = vim.api.nvim_buf_call(bufnr, function()
      return vim.lsp.start(config, {
        reuse_client = function(client, conf)
          return client.name == conf.name and client.config.root_dir == conf.root_dir
        end,
      })
    end)
  else
    client_id = vim.lsp.start_client(config)
    if client_id then
      vim.lsp.buf_attach_client(bufnr, client_id)
    end
  end
  clients_by_root[root] = client_id
  return client_id
end

--- The client serving `root` (nil when none is running).
function M.client_for_root(root)
  local client_id = clients_by_root[root]
  if live(client_id) then
    return vim.lsp.get_client_by_id(client_id)
  end
  return nil
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if opts and opts.cmd then
    M.config.cmd = opts.cmd -- lists are replaced, not merged
  end
  if opts and opts.filetypes then
    M.config.filetypes = opts.filetypes
  end
  if opts and opts.root_markers then
    M.config.root_markers = opts.root_markers
  end
  commands.register()
  augroup = vim.api.nvim_create_augroup("budgetlens_attach", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = augroup,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- prompt files: by name (Neovim gives .prompty and .prompt no filetype of its own)
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = augroup,
    pattern = util.prompt_patterns,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- buffers opened before setup()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and (vim.tbl_contains(M.config.filetypes,
        vim.bo[bufnr].filetype) or util.is_prompt_file(vim.api.nvim_buf_get_name(bufnr))) then
      M.attach(bufnr)
    end
  end
  return M
end

-- the commands, also callable from Lua
M.hierarchy = commands.hierarchy
M.clamp_all = commands.clamp_all
M.report = commands.report

return M
