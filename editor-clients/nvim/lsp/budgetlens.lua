-- budgetlens language server config for Neovim 0.11+:
--   vim.lsp.enable("budgetlens")
-- (override fields with vim.lsp.config("budgetlens", { ... })). Needs this plugin on the
-- runtimepath. Neovim 0.7-0.10: use require("budgetlens").setup() instead.
local util = require("budgetlens.util")
local commands = require("budgetlens.commands")

return {
  cmd = { "budgetlens", "serve" },
  filetypes = { "yaml", "json", "text" },
  root_markers = { "config.json" },
  -- attach only inside a root marked by config.json, and *.txt only in its prompts folder
  -- (root_dir takes precedence over root_markers, which stays for tools that read it)
  root_dir = function(bufnr, on_dir)
    local root = util.root_for_buffer(bufnr, { "config.json" }, { "yaml", "json", "text" })
    if root then
      on_dir(root)
    end
  end,
  settings = {
    budgetlens = vim.empty_dict(), -- an empty JSON object ({} would be sent as [])
  },
  -- Neovim does not declare code-lens refresh itself (0.11): without this the server never
  -- asks for fresh lenses, and they stay stale after a quick-fix until the next :w.
  -- (vim.lsp merges this table into the default client capabilities.)
  capabilities = {
    workspace = { codeLens = { refreshSupport = true } },
  },
  -- workspace/codeLens/refresh: re-request the lenses of every attached buffer
  handlers = commands.client_handlers(),
  -- plugin/budgetlens.lua (on the runtimepath with this file) registers the handlers that
  -- show the results of budgetlens.showHierarchyContext and budgetlens.showBudgetReport in
  -- scratch splits, so the server need not open a generated file (window/showDocument)
  init_options = { displaysCommandResults = true },
}
