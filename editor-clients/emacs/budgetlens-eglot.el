;;; budgetlens-eglot.el --- budgetlens with Emacs's eglot  -*- lexical-binding: t; -*-

;; Load from your init file (Emacs 28 with eglot 1.9 from ELPA or Debian's elpa-eglot,
;; or Emacs 29+ where eglot is built in):
;;
;;   (load "/path/to/budgetlens/editor-clients/emacs/budgetlens-eglot.el")
;;
;; then M-x eglot in a pipeline, prompt or JSON buffer (or add `eglot-ensure' to
;; `yaml-mode-hook').  `budgetlens' must be on `exec-path' (PATH).
;;
;; What it does: registers `budgetlens serve' for YAML, JSON and prompt (text) buffers, gives
;; *.prompty and *.prompt files `budgetlens-prompt-mode' (unless another mode claims them), and,
;; for eglot only and only where no version control marks a project, makes the nearest folder
;; holding config.json the project root, so one server serves the whole workspace (without
;; it eglot roots each folder on its own).

;;; Code:

(require 'eglot)
(require 'project)

(defgroup budgetlens nil "budgetlens language server." :group 'tools)

(defcustom budgetlens-command '("budgetlens" "serve")
  "The budgetlens server command."
  :type '(repeat string))

(defcustom budgetlens-settings nil
  "budgetlens settings (a plist), sent as initializationOptions.
For example \\='(:policy \"auto_clamp\" :hierarchyBudget 2000)."
  :type 'plist)

(defun budgetlens-project (dir)
  "For eglot, the budgetlens workspace of DIR: the nearest folder holding config.json."
  (when-let (((bound-and-true-p eglot-lsp-context))
             (root (locate-dominating-file dir "config.json")))
    (cons 'budgetlens (expand-file-name root))))

(cl-defmethod project-root ((project (head budgetlens)))
  (cdr project))

(add-hook 'project-find-functions #'budgetlens-project 90) ; after version control

(defclass budgetlens-eglot-server (eglot-lsp-server) ()
  :documentation "The budgetlens language server.")

(cl-defmethod eglot-initialization-options ((_server budgetlens-eglot-server))
  (or budgetlens-settings eglot--{}))

(define-derived-mode budgetlens-prompt-mode text-mode "Prompt"
  "Prompty (*.prompty) and Dotprompt (*.prompt) files, which Emacs has no mode for.")

;; appended: a mode another package gives these files comes first and wins
(add-to-list 'auto-mode-alist '("\\.prompty\\'" . budgetlens-prompt-mode) t)
(add-to-list 'auto-mode-alist '("\\.prompt\\'" . budgetlens-prompt-mode) t)

(add-to-list 'eglot-server-programs
             `((yaml-mode js-mode js-json-mode json-mode text-mode budgetlens-prompt-mode)
               . (budgetlens-eglot-server . ,budgetlens-command)))

(provide 'budgetlens-eglot)
;;; budgetlens-eglot.el ends here
