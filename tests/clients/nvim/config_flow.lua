-- The plugin's configuration pieces without a server: lsp/budgetlens.lua (the 0.11+ config)
-- and the "server not installed" message of setup().
local H = require("nvim_harness")

H.run(function()
  local plugin = assert(os.getenv("BUDGETLENS_NVIM_PLUGIN"))
  vim.opt.rtp:prepend(plugin)
  vim.cmd("filetype on")
  local config = dofile(plugin .. "/lsp/budgetlens.lua")
  H.record("lsp_config", {
    cmd = config.cmd,
    filetypes = config.filetypes,
    root_markers = config.root_markers,
    settings = config.settings,
    root_dir_is_function = type(config.root_dir) == "function",
  })
  local roots = {}
  for _, rel in ipairs({ "pipelines/chat.yaml", "prompts/chat.txt", "notes.txt",
      "responses/truncated.json" }) do
    vim.fn.writefile({ "x" }, H.workspace .. "/notes.txt")
    vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/" .. rel))
    local got = vim.NIL
    config.root_dir(vim.api.nvim_get_current_buf(), function(root)
      got = root
    end)
    roots[rel] = got
  end
  vim.fn.mkdir("/tmp/budgetlens-no-root-" .. vim.fn.getpid(), "p")
  local outside = "/tmp/budgetlens-no-root-" .. vim.fn.getpid() .. "/x.yaml"
  vim.cmd("edit " .. outside)
  local got = vim.NIL
  config.root_dir(vim.api.nvim_get_current_buf(), function(root)
    got = root
  end)
  roots["outside"] = got
  vim.fn.delete("/tmp/budgetlens-no-root-" .. vim.fn.getpid(), "rf")
  H.record("roots", roots)

  -- setup() with a command that does not exist: a clear error, no client, no crash
  local notes = {}
  vim.notify = function(message, level)
    table.insert(notes, { message = message, level = level })
  end
  require("budgetlens").setup({ cmd = { "budgetlens-not-installed-here", "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/pipelines/long_report.yaml"))
  H.record("missing_server", { notes = notes,
    clients = #require("budgetlens.util").get_clients(vim.api.nvim_get_current_buf()) })
end)
