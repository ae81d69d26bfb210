-- Helpers for the headless Neovim test scripts: record results to a JSON file after every
-- step (so a timeout still shows how far it got), wait with a deadline, always quit.
local H = {}

H.results = { steps = {}, done = false }
H.results_path = assert(os.getenv("BUDGETLENS_NVIM_RESULTS"), "BUDGETLENS_NVIM_RESULTS not set")
H.workspace = assert(os.getenv("BUDGETLENS_NVIM_WORKSPACE"), "BUDGETLENS_NVIM_WORKSPACE not set")

function H.flush()
  vim.fn.writefile({ vim.fn.json_encode(H.results) }, H.results_path)
end

function H.record(key, value)
  H.results[key] = value
  table.insert(H.results.steps, key)
  H.flush()
end

--- Wait until `predicate()` is true; raise an error naming `what` after `timeout_ms`.
function H.wait(timeout_ms, predicate, what)
  local ok = vim.wait(timeout_ms, predicate, 20)
  if not ok then
    error(string.format("timed out after %d ms waiting for %s", timeout_ms, what), 2)
  end
end

--- Run `body` with errors recorded, then write the results and quit Neovim.
function H.run(body)
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    H.results.error = tostring(err)
  end
  H.results.done = ok
  local messages = vim.api.nvim_exec("messages", true)
  H.results.messages = messages
  H.flush()
  vim.cmd("qa!")
end

--- Plain LSP diagnostics for display in results (range, code, message, severity).
function H.plain_diagnostics(list)
  local out = {}
  for _, d in ipairs(list or {}) do
    table.insert(out, {
      code = d.code,
      message = d.message,
      severity = d.severity,
      range = d.range,
      data = d.data,
    })
  end
  return out
end

return H
