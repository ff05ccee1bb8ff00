-- Headless Neovim driver for tests/adapters.rs: loads adapters/neovim with the built-in LSP
-- client, opens $TANDEM_FILE (filetype detection starts `tandem lsp` through the adapter),
-- asks for the hover at $TANDEM_LINE:$TANDEM_COL (0-based) and writes the answers as JSON
-- to $TANDEM_OUT. Any failure is written there too, then Neovim quits.
local out = os.getenv("TANDEM_OUT")

local function finish(value)
  local f = assert(io.open(out, "w"))
  f:write(vim.fn.json_encode(value))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(os.getenv("TANDEM_ADAPTER"))
  vim.cmd("filetype on")
  local tandem = require("tandem").setup({ cmd = os.getenv("TANDEM_BIN") })
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TANDEM_FILE")))
  local bufnr = vim.api.nvim_get_current_buf()
  local ready = vim.wait(20000, function()
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.server_capabilities ~= nil and client.server_capabilities.hoverProvider then
        return true
      end
    end
    return false
  end, 20)
  if not ready then
    error("tandem lsp did not attach to the buffer (filetype " .. vim.bo[bufnr].filetype .. ")")
  end
  local clients = vim.lsp.buf_get_clients(bufnr)
  local names, roots = {}, {}
  for _, c in pairs(clients) do
    table.insert(names, c.name)
    table.insert(roots, c.config.root_dir)
  end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = tonumber(os.getenv("TANDEM_LINE")), character = tonumber(os.getenv("TANDEM_COL")) },
  }
  local answers, request_err = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 20000)
  if not answers then
    error("hover failed: " .. tostring(request_err))
  end
  local hovers = {}
  for _, answer in pairs(answers) do
    if answer.error then
      error("hover error: " .. vim.inspect(answer.error))
    end
    table.insert(hovers, answer.result)
  end
  finish({ clients = names, roots = roots, hovers = hovers, dap = tandem.setup_dap({ cmd = "tandem" }) })
end)
if not ok then
  finish({ error = tostring(err) })
end
