-- A user's init.lua on Neovim 0.11, the documented plain way: the plugin on the runtimepath
-- (for lsp/budgetlens.lua and plugin/budgetlens.lua) and vim.lsp.enable, nothing else.
vim.opt.rtp:prepend(os.getenv("BUDGETLENS_NVIM_PLUGIN"))
vim.cmd("filetype on")
vim.lsp.enable("budgetlens")
