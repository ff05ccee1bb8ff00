-- Headless Neovim driver for tests/adapters.rs: a second language server (tests/editors/
-- fake_lsp.py, standing in for clangd) attaches to every C buffer, started by a FileType
-- autocommand set up after tandem's; adapters/neovim in "auto" mode must then serve the
-- buffer with `tandem lsp` in companion mode. Opens $TANDEM_FILE, waits for that, asks every
-- client for the hover at $TANDEM_LINE:$TANDEM_COL (0-based) and writes, as JSON to
-- $TANDEM_OUT, each client's name, tandem's mode and capabilities, and the hovers by client.
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
  local fake
  vim.api.nvim_create_autocmd("FileType", {
    pattern = "c",
    callback = function(args)
      fake = fake or vim.lsp.start_client({ name = "fake-clangd", cmd = { "python3", os.getenv("TANDEM_FAKE_LSP") } })
      vim.lsp.buf_attach_client(args.buf, fake)
    end,
  })
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("TANDEM_FILE")))
  local bufnr = vim.api.nvim_get_current_buf()
  local function companion()
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.name == "tandem" and client.server_capabilities ~= nil
          and client.config.init_options.tandem.features == "companion" then
        return client
      end
    end
    return nil
  end
  if not vim.wait(20000, function() return companion() ~= nil and tandem.other_client(bufnr) ~= nil end, 20) then
    local seen = {}
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      table.insert(seen, c.name .. ":" .. tostring(c.config.init_options and vim.inspect(c.config.init_options)))
    end
    error("tandem did not switch to companion mode; clients: " .. table.concat(seen, ", "))
  end
  local client = companion()
  local caps = client.server_capabilities
  local names = {}
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    table.insert(names, c.name)
  end
  table.sort(names)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = tonumber(os.getenv("TANDEM_LINE")), character = tonumber(os.getenv("TANDEM_COL")) },
  }
  local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 20000) or {}
  local hovers = {}
  for id, answer in pairs(answers) do
    local c = vim.lsp.get_client_by_id(id)
    hovers[c and c.name or tostring(id)] = answer.error and { error = answer.error } or (answer.result or vim.NIL)
  end
  local running = 0
  for _, c in pairs(vim.lsp.get_active_clients()) do
    if c.name == "tandem" and not c.is_stopped() then
      running = running + 1
    end
  end
  finish({
    clients = names,
    features = client.config.init_options.tandem.features,
    tandem_running = running,
    document_symbols = caps.documentSymbolProvider or false,
    definition = caps.definitionProvider or false,
    hover_provider = caps.hoverProvider or false,
    hovers = hovers,
  })
end)
if not ok then
  finish({ error = tostring(err) })
end
