-- Small helpers shared by the plugin and lsp/budgetlens.lua. Works on Neovim 0.7 and later.
local M = {}

M.name = "budgetlens"
M.default_cmd = { "budgetlens", "serve" }
M.default_filetypes = { "yaml", "json", "text" }
M.default_root_markers = { "config.json" }
M.default_cut_marker = "<<<CUT>>>"
--- Prompt files in their own formats (GitHub Models, Prompty, Dotprompt): served with or
--- without a config.json, whatever filetype another plugin gives them.
M.prompt_patterns = { "*.prompt.yml", "*.prompt.yaml", "*.prompty", "*.prompt" }

function M.is_prompt_file(path)
  return path:match("%.prompt%.ya?ml$") ~= nil or path:match("%.prompty$") ~= nil
    or path:match("%.prompt$") ~= nil
end

function M.has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

local uv = vim.uv or vim.loop

local function exists(path)
  return uv.fs_stat(path) ~= nil
end

local function is_file(path)
  local stat = uv.fs_stat(path)
  return stat ~= nil and stat.type == "file"
end

--- The nearest directory at or above `path` holding one of `markers`, or nil.
function M.find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ":p")
  if not (exists(dir) and uv.fs_stat(dir).type == "directory") then
    dir = vim.fn.fnamemodify(dir, ":h")
  end
  dir = dir:gsub("/+$", "")
  if dir == "" then
    dir = "/"
  end
  while true do
    for _, marker in ipairs(markers) do
      if is_file(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
end

--- The prompts folder of a workspace: `prompts_dir` of its config.json (default "prompts").
function M.prompts_dir(root)
  local prompts = "prompts"
  local ok, lines = pcall(vim.fn.readfile, root .. "/config.json")
  if ok then
    local decoded_ok, config = pcall(vim.fn.json_decode, table.concat(lines, "\n"))
    if decoded_ok and type(config) == "table" and type(config.prompts_dir) == "string" then
      prompts = config.prompts_dir
    end
  end
  if prompts:sub(1, 1) ~= "/" then
    prompts = root .. "/" .. prompts
  end
  return (vim.fn.fnamemodify(prompts, ":p"):gsub("/+$", ""))
end

local function starts_with(text, prefix)
  return text:sub(1, #prefix) == prefix
end

--- The workspace root budgetlens should serve `bufnr` from, or nil when it should not attach.
--- YAML and JSON files attach anywhere under a root; other files only when they are prompt
--- files (`*.txt` under the workspace's prompts folder).
function M.root_for_buffer(bufnr, markers, filetypes)
  markers = markers or M.default_root_markers
  filetypes = filetypes or M.default_filetypes
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == "" then
    return nil
  end
  path = vim.fn.fnamemodify(path, ":p")
  local root = M.find_root(path, markers)
  if M.is_prompt_file(path) then -- no config.json needed: pyproject.toml, else its folder
    return root or M.find_root(path, { "pyproject.toml" })
      or (vim.fn.fnamemodify(path, ":h"):gsub("/+$", ""))
  end
  if not root then
    return nil
  end
  local filetype = vim.bo[bufnr].filetype
  if path:match("%.txt$") then
    if starts_with(path, M.prompts_dir(root) .. "/") then
      return root
    end
    return nil
  end
  if filetype == "text" or not vim.tbl_contains(filetypes, filetype) then
    return nil
  end
  return root
end

--- budgetlens clients attached to `bufnr`.
function M.get_clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = M.name })
  end
  local clients = {}
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == M.name then
      table.insert(clients, client)
    end
  end
  return clients
end

--- client.request across versions (0.11 made it a method).
function M.request(client, method, params, handler, bufnr)
  if M.has("0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- A copy of a settings table where every empty table is an empty JSON object: Neovim's JSON
--- encoder writes a plain {} as [], which the server rightly rejects as settings.
function M.objects(value)
  if type(value) ~= "table" then
    return value
  end
  if next(value) == nil then
    return vim.empty_dict()
  end
  local copy = {}
  for key, item in pairs(value) do
    copy[key] = M.objects(item)
  end
  return copy
end

function M.notify(message, level)
  vim.notify("budgetlens: " .. message, level or vim.log.levels.INFO)
end

return M
