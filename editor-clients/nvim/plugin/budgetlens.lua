-- Loaded automatically when the plugin is on the runtimepath. Registers the user commands
-- (:BudgetlensHierarchy, :BudgetlensClampAll, :BudgetlensReport) and the handlers for commands
-- that code lenses carry, so they also exist when the server is started by
-- vim.lsp.enable("budgetlens") (Neovim 0.11+) instead of require("budgetlens").setup().
if vim.g.loaded_budgetlens == 1 then
  return
end
vim.g.loaded_budgetlens = 1

require("budgetlens.commands").register()

if vim.fn.has("nvim-0.8") == 1 then
  vim.api.nvim_create_autocmd("LspAttach", {
    group = vim.api.nvim_create_augroup("budgetlens_lsp_attach", { clear = true }),
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == "budgetlens" then
        -- setup() users get this from their on_attach already; doing it twice is harmless
        local budgetlens = require("budgetlens")
        local codelens = not budgetlens.config or budgetlens.config.codelens ~= false
        if codelens then
          budgetlens.on_attach_lenses(args.buf)
        end
      end
    end,
  })
end
