;;; tandem.el --- tandem for Emacs: eglot (language server) and dape (debugger)  -*- lexical-binding: t -*-

;; tandem is one binary: `tandem lsp' gives language features with live values from a
;; paused program, `tandem dap' debugs C, C++ and Rust.  `tandem dap' started in a project
;; bridges to that project's `tandem lsp', so the session it starts shows up in hovers.
;;
;; Usage:
;;   (add-to-list 'load-path "/path/to/tandem/adapters/emacs")
;;   (require 'tandem)
;;   (add-hook 'c-mode-hook #'eglot-ensure)   ; and c++-mode, rust-mode, ...
;;   M-x dape RET tandem program "a.out" RET  ; with dape installed (Emacs 29+)
;;
;; Beside clangd or rust-analyzer: eglot runs one server per buffer, so there tandem is the
;; C/C++/Rust server (`tandem-features' "full", the default).  lsp-mode runs several; with
;;   (setq tandem-features "companion")
;;   (tandem-lsp-mode-register)               ; after (require 'lsp-mode)
;; tandem starts as an add-on beside lsp-mode's clangd or rust-analyzer and serves only what
;; a debugger knows (live hovers, inline values, hit counts, returned values).

;;; Code:

(require 'cl-lib)

(defgroup tandem nil
  "Native debugging and language features from one tandem binary."
  :group 'tools)

(defcustom tandem-program "tandem"
  "The tandem executable: a name looked up in `exec-path', or a path."
  :type 'string)

(defcustom tandem-features "full"
  "Which language features `tandem lsp' serves: \"full\" or \"companion\" (beside
clangd or rust-analyzer: only what a debugger knows)."
  :type '(choice (const "full") (const "companion")))

(defconst tandem-modes
  '(c-mode c++-mode rust-mode c-ts-mode c++-ts-mode rust-ts-mode)
  "Major modes tandem serves.")

(defun tandem-initialization-options ()
  "The `initializationOptions' of `tandem lsp'."
  (list :tandem (list :features tandem-features)))

(defun tandem-eglot-contact (&optional _interactive)
  "The command line eglot runs for the language server, with its options."
  (list tandem-program "lsp" :initializationOptions (tandem-initialization-options)))

(defun tandem-lsp-mode-register ()
  "Registers `tandem lsp' with lsp-mode as an add-on beside the language's own server."
  (when (fboundp 'lsp-register-client)
    (lsp-register-client
     (make-lsp-client
      :new-connection (lsp-stdio-connection (lambda () (list tandem-program "lsp")))
      :activation-fn (lsp-activate-on "c" "cpp" "rust")
      :add-on? t
      :server-id 'tandem
      :initialization-options #'tandem-initialization-options))))

(defun tandem-dape-config ()
  "The dape configuration for tandem (a launch; set `program' and `args')."
  `(modes ,tandem-modes
    ensure dape-ensure-command
    command ,tandem-program
    command-args ("dap")
    command-cwd dape-command-cwd
    :type "tandem"
    :request "launch"
    :cwd dape-cwd
    :program dape-buffer-default
    :args []
    :stopOnEntry nil))

(defun tandem-dape-attach-config ()
  "The dape configuration attaching tandem to a process (set `:pid')."
  `(modes ,tandem-modes
    ensure dape-ensure-command
    command ,tandem-program
    command-args ("dap")
    command-cwd dape-command-cwd
    :type "tandem"
    :request "attach"
    :pid nil))

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs (cons tandem-modes #'tandem-eglot-contact))
  ;; The "Debug" code lens carries a launch configuration for the debugger.
  (cl-defmethod eglot-execute :around (server action)
    (if (and (fboundp 'dape)
             (equal (plist-get action :command) "tandem.debug"))
        (let ((launch (aref (plist-get action :arguments) 0)))
          (dape (append (list 'command tandem-program 'command-args '("dap")
                              'command-cwd (plist-get launch :cwd))
                        (list :type "tandem" :request "launch"
                              :program (plist-get launch :program)
                              :args (plist-get launch :args)
                              :cwd (plist-get launch :cwd)))))
      (cl-call-next-method server action))))

(with-eval-after-load 'dape
  (add-to-list 'dape-configs (cons 'tandem (tandem-dape-config)))
  (add-to-list 'dape-configs (cons 'tandem-attach (tandem-dape-attach-config))))

(provide 'tandem)
;;; tandem.el ends here
