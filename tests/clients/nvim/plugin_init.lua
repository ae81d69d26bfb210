-- A user's init.lua for the plugin test: the plugin on the runtimepath and setup{} with
-- every default. (The venv's bin folder is on PATH, so `budgetlens serve` resolves.)
vim.opt.rtp:prepend(os.getenv("BUDGETLENS_NVIM_PLUGIN"))
vim.cmd("filetype on")
require("budgetlens").setup({})
