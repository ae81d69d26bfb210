-- Prompt files in their own formats in the Neovim plugin, in a folder with no config.json:
-- opening each file attaches a budgetlens client (by the file's name: Neovim gives .prompty
-- and .prompt no filetype) and its BL070 diagnostic arrives. Results for test_nvim_prompts.py.
local H = require("nvim_harness")

local FILES = vim.split(os.getenv("BUDGETLENS_NVIM_PROMPT_FILES"), ",")
local TIMEOUT = tonumber(os.getenv("BUDGETLENS_TEST_WAIT_MS")) or 30000  -- a hang guard

H.run(function()
  local shown = {}
  for _, rel in ipairs(FILES) do
    vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/" .. rel))
    local bufnr = vim.api.nvim_get_current_buf()
    H.wait(TIMEOUT, function()
      return #require("budgetlens.util").get_clients(bufnr) == 1
    end, "a budgetlens client on " .. rel)
    H.wait(TIMEOUT, function()
      for _, d in ipairs(vim.diagnostic.get(bufnr)) do
        if d.code == "BL070" then
          return true
        end
      end
      return false
    end, "BL070 on " .. rel)
    local codes = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      table.insert(codes, d.code or vim.NIL)
    end
    shown[rel] = { filetype = vim.bo[bufnr].filetype, codes = codes }
  end
  H.record("prompt_files", shown)
end)
