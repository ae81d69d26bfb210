-- A user's init.lua on Neovim 0.11: the plugin on the runtimepath and setup{} with defaults.
vim.opt.rtp:prepend(os.getenv("BUDGETLENS_NVIM_PLUGIN"))
vim.cmd("filetype on")
require("budgetlens").setup({})
