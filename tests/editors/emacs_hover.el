;;; emacs_hover.el --- batch Emacs driver for tests/adapters.rs  -*- lexical-binding: t -*-

;; Loads adapters/emacs/tandem.el and Debian's eglot, opens $TANDEM_FILE in c-mode, lets
;; eglot start the server tandem.el registers, asks for the hover at $TANDEM_LINE:$TANDEM_COL
;; (0-based; ASCII, so columns are characters) and prints one JSON line: the hover, the
;; server's command line, and the dape configuration's command line.

;;; Code:

(require 'json)
;; Debian's site-start puts elpa-eglot on the load path; activate packages as an init
;; file would.
(require 'package)
(package-initialize)
(require 'eglot)
(load (getenv "TANDEM_ADAPTER") nil t)
(setq tandem-program (getenv "TANDEM_BIN"))
(setq eglot-sync-connect 30)

(let ((buf (find-file-noselect (getenv "TANDEM_FILE"))))
  (with-current-buffer buf
    (c-mode)
    (let* ((contact (eglot--guess-contact))
           (server (apply #'eglot contact)))
      (goto-char (point-min))
      (forward-line (string-to-number (getenv "TANDEM_LINE")))
      (forward-char (string-to-number (getenv "TANDEM_COL")))
      (let* ((hover (jsonrpc-request server :textDocument/hover
                                     (eglot--TextDocumentPositionParams)))
             (dape (tandem-dape-config)))
        (princ (json-encode
                (list :hover hover
                      :server (nth 3 contact)
                      :dapeCommand (plist-get dape 'command)
                      :dapeArgs (vconcat (plist-get dape 'command-args))
                      :dapeType (plist-get dape :type))))
        (terpri)
        (eglot-shutdown server)))))

;;; emacs_hover.el ends here
