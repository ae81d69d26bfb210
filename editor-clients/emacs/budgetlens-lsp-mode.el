;;; budgetlens-lsp-mode.el --- budgetlens with lsp-mode  -*- lexical-binding: t; -*-

;; Load from your init file (lsp-mode 8.0 or later, e.g. Debian's elpa-lsp-mode):
;;
;;   (load "/path/to/budgetlens/editor-clients/emacs/budgetlens-lsp-mode.el")
;;
;; then M-x lsp in a pipeline, prompt or JSON buffer (or add `lsp-deferred' to
;; `yaml-mode-hook').  `budgetlens' must be on `exec-path' (PATH), or set
;; `budgetlens-lsp-command'.  lsp-mode asks once which folder is the project: choose the one
;; holding config.json.
;;
;; budgetlens runs as an add-on server: next to yaml-language-server or a JSON server, if you
;; use them.  It serves YAML and JSON files below a config.json, and prompt files (*.txt);
;; and *.prompt.yml, *.prompty and *.prompt files anywhere, alongside the mode that owns them.

;;; Code:

(require 'lsp-mode)
(require 'cl-lib)

(defgroup budgetlens-lsp nil "budgetlens language server for lsp-mode." :group 'lsp-mode)

(defcustom budgetlens-lsp-command '("budgetlens" "serve")
  "The budgetlens server command."
  :type '(repeat string))

(defcustom budgetlens-lsp-settings nil
  "budgetlens settings (an alist), sent as initializationOptions.
For example \\='((policy . \"auto_clamp\") (hierarchyBudget . 2000))."
  :type '(alist :key-type symbol))

(defconst budgetlens-lsp--prompt-files
  '(("\\.prompt\\.ya?ml\\'" . "yaml") ("\\.prompty\\'" . "prompty") ("\\.prompt\\'" . "dotprompt"))
  "Prompt files in their own formats (GitHub Models, Prompty, Dotprompt), and language ids.")

;; Emacs has no mode for *.prompty and *.prompt: lsp-mode finds their language id by name
(dolist (entry (cdr budgetlens-lsp--prompt-files))
  (add-to-list 'lsp-language-id-configuration entry t))

(defun budgetlens-lsp--activate-p (file-name _mode)
  "Serve FILE-NAME when it is YAML, JSON or a prompt file below a config.json, or a prompt
file in its own format (*.prompt.yml, *.prompty, *.prompt) anywhere, whatever its mode."
  (and file-name
       (or (cl-some (lambda (entry) (string-match-p (car entry) file-name))
                    budgetlens-lsp--prompt-files)
           (and (string-match-p "\\.\\(ya?ml\\|json\\|txt\\)\\'" file-name)
                (locate-dominating-file file-name "config.json")))
       t))

(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection (lambda () budgetlens-lsp-command))
  :activation-fn #'budgetlens-lsp--activate-p
  :server-id 'budgetlens
  :add-on? t
  :priority -1
  :initialization-options (lambda () (or budgetlens-lsp-settings (make-hash-table)))))

(provide 'budgetlens-lsp-mode)
;;; budgetlens-lsp-mode.el ends here
