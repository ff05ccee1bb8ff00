-- tandem for Neovim: the built-in LSP client runs `tandem lsp` for C, C++ and Rust buffers,
-- and nvim-dap (when installed) runs `tandem dap`, which bridges to that language server so
-- hovers and inline values show the paused program. Works with Neovim 0.7 and later.
--
--   require("tandem").setup({ cmd = "tandem" })
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

--- The language server's client configuration for a buffer.
function M.lsp_config(opts, bufnr)
  local root = M.root_dir(vim.api.nvim_buf_get_name(bufnr))
  return {
    name = "tandem",
    cmd = { opts.cmd, "lsp" },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = { tandem = { binaries = opts.binaries } },
  }
end

local clients = {}

--- Starts (or reuses) the client of the buffer's root and attaches the buffer.
function M.attach(opts, bufnr)
  local config = M.lsp_config(opts, bufnr)
  if vim.lsp.start then
    -- Neovim 0.8+: reuses a client with the same name and root.
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local id = clients[config.root_dir]
  if not id or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(config)
    clients[config.root_dir] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
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
  opts = vim.tbl_extend("keep", opts or {}, { cmd = "tandem", binaries = nil })
  local group = vim.api.nvim_create_augroup("tandem", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.filetypes,
    callback = function(args)
      M.attach(opts, args.buf)
    end,
  })
  M.setup_dap(opts)
  return M
end

return M
