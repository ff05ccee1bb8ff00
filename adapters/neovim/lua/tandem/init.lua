-- tandem for Neovim: the built-in LSP client runs `tandem lsp` for C, C++ and Rust buffers,
-- and nvim-dap (when installed) runs `tandem dap`, which bridges to that language server so
-- hovers and inline values show the paused program. Works with Neovim 0.7 and later.
--
--   require("tandem").setup({ cmd = "tandem", features = "auto" })
--
-- `features`: "full" (every feature from debug information), "companion" (only what a
-- debugger knows, beside clangd or rust-analyzer), or "auto" (the default): companion when
-- another language server is attached to the buffer. That server may attach after tandem
-- (the order of FileType autocommands is the user's), so tandem decides once the buffer's
-- FileType autocommands have run, and decides again when another client attaches later
-- (LspAttach, Neovim 0.8+; on 0.7 a check `recheck_ms` after attaching), restarting its
-- server in companion mode.
local M = {}

M.filetypes = { "c", "cpp", "rust" }
M.root_markers = { "compile_commands.json", "Cargo.toml", "Makefile", "CMakeLists.txt", ".git" }

--- The nearest ancestor of `path` holding a root marker, else the working directory.
function M.root_dir(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while dir and dir ~= "" do
    for _, marker in ipairs(M.root_markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  return vim.loop.cwd()
end

--- Whether a language server other than tandem is attached to the buffer.
function M.other_client(bufnr)
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name ~= "tandem" then
      return client.name
    end
  end
  return nil
end

--- The `features` mode for the buffer: the option when it is "full" or "companion", else
--- companion when another client is attached.
function M.features(opts, bufnr)
  if opts.features == "full" or opts.features == "companion" then
    return opts.features
  end
  return M.other_client(bufnr) and "companion" or "full"
end

--- The language server's client configuration for a buffer.
function M.lsp_config(opts, bufnr, features)
  local root = M.root_dir(vim.api.nvim_buf_get_name(bufnr))
  return {
    name = "tandem",
    cmd = { opts.cmd, "lsp" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = { tandem = { binaries = opts.binaries, features = features or "full" } },
  }
end

-- The tandem client of each root: { id = client id, features = mode }.
local clients = {}

--- The tandem client serving the buffer's root, if one runs: its id and mode.
function M.client_of(bufnr)
  local served = clients[M.root_dir(vim.api.nvim_buf_get_name(bufnr))]
  if served and vim.lsp.get_client_by_id(served.id) ~= nil then
    return served
  end
  return nil
end

--- Starts (or reuses) the client of the buffer's root in the buffer's mode and attaches the
--- buffer; a client of the root running in the other mode is replaced.
function M.attach_now(opts, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return nil
  end
  local features = M.features(opts, bufnr)
  local config = M.lsp_config(opts, bufnr, features)
  local served = clients[config.root_dir]
  if served and vim.lsp.get_client_by_id(served.id) == nil then
    served = nil
  end
  if served and served.features ~= features then
    -- Its buffers move to the new client.
    local buffers = vim.lsp.get_client_by_id(served.id).attached_buffers or {}
    vim.lsp.stop_client(served.id)
    served = nil
    local id = vim.lsp.start_client(config)
    clients[config.root_dir] = id and { id = id, features = features } or nil
    for b in pairs(buffers) do
      if id and vim.api.nvim_buf_is_valid(b) then
        vim.lsp.buf_attach_client(b, id)
      end
    end
  end
  if not served then
    local current = clients[config.root_dir]
    if not current or vim.lsp.get_client_by_id(current.id) == nil then
      local id = vim.lsp.start_client(config)
      clients[config.root_dir] = id and { id = id, features = features } or nil
    end
  end
  local current = clients[config.root_dir]
  if current then
    vim.lsp.buf_attach_client(bufnr, current.id)
    return current.id
  end
  return nil
end

--- Attaches the buffer once its FileType autocommands (which may start other servers) have
--- run, and looks again later for a server that attached after tandem.
function M.attach(opts, bufnr)
  vim.schedule(function()
    M.attach_now(opts, bufnr)
    if opts.features ~= "full" and opts.features ~= "companion" and vim.fn.exists("##LspAttach") ~= 1 then
      vim.defer_fn(function()
        M.recheck(opts, bufnr)
      end, opts.recheck_ms)
    end
  end)
end

--- In "auto" mode: another client now attached to a buffer tandem serves in full mode
--- switches tandem to companion mode.
function M.recheck(opts, bufnr)
  local served = M.client_of(bufnr)
  if served and served.features == "full" and M.features(opts, bufnr) == "companion" then
    M.attach_now(opts, bufnr)
  end
end

--- nvim-dap: the `tandem` adapter and launch/attach configurations.
function M.setup_dap(opts)
  local ok, dap = pcall(require, "dap")
  if not ok then
    return false
  end
  dap.adapters.tandem = {
    type = "executable",
    command = opts.cmd,
    args = { "dap" },
    -- `tandem dap` finds the workspace's `tandem lsp` from its working directory.
    options = { cwd = vim.loop.cwd() },
  }
  local configurations = {
    {
      type = "tandem",
      request = "launch",
      name = "tandem: Launch",
      program = function()
        return vim.fn.input("Program: ", vim.loop.cwd() .. "/", "file")
      end,
      cwd = "${workspaceFolder}",
      stopOnEntry = false,
    },
    {
      type = "tandem",
      request = "attach",
      name = "tandem: Attach",
      pid = function()
        return require("dap.utils").pick_process()
      end,
    },
  }
  for _, ft in ipairs(M.filetypes) do
    dap.configurations[ft] = configurations
  end
  -- The "Debug" code lens: its argument is a ready launch configuration.
  vim.lsp.commands["tandem.debug"] = function(command)
    dap.run(command.arguments[1])
  end
  return true
end

function M.setup(opts)
  opts = vim.tbl_extend("keep", opts or {}, { cmd = "tandem", binaries = nil, features = "auto", recheck_ms = 1500 })
  local group = vim.api.nvim_create_augroup("tandem", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.filetypes,
    callback = function(args)
      M.attach(opts, args.buf)
    end,
  })
  if vim.fn.exists("##LspAttach") == 1 then
    vim.api.nvim_create_autocmd("LspAttach", {
      group = group,
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data and args.data.client_id or -1)
        if client and client.name ~= "tandem" then
          vim.schedule(function()
            M.recheck(opts, args.buf)
          end)
        end
      end,
    })
  end
  M.setup_dap(opts)
  return M
end

return M
