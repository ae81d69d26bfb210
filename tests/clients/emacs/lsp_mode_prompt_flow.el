;;; lsp_mode_prompt_flow.el --- lsp-mode on prompt files, in batch mode  -*- lexical-binding: t; -*-
;; Like a user with the config of editor-clients/emacs/budgetlens-lsp-mode.el: the folder
;; (no config.json) imported as the project (lsp-mode's first prompt), then each file named
;; in $BUDGETLENS_PROMPT_FILES (comma-separated) opened, M-x lsp, and its major mode and
;; diagnostics recorded once BL070 arrives.

(load (expand-file-name "lsp_mode_setup.el" (file-name-directory load-file-name)) nil t)

(defun bl-codes ()
  (mapcar (lambda (d) (lsp:diagnostic-code? d))
          (gethash (lsp--fix-path-casing buffer-file-name) (lsp-diagnostics t))))

(defun bl-prompt-file (name)
  (with-current-buffer (bl-find name)
    (lsp)
    (bl-wait (format "BL070 on %s" name) (lambda () (member "BL070" (bl-codes))))
    (bl-record (intern name)
               (list (cons 'mode (symbol-name major-mode))
                     (cons 'codes (bl-codes))
                     (cons 'servers (mapcar (lambda (w) (symbol-name (lsp--workspace-server-id w)))
                                            (lsp-workspaces)))))))

(lsp-workspace-folders-add bl-workspace)

(bl-run (mapcar (lambda (name) (cons (intern name) (lambda () (bl-prompt-file name))))
                (split-string (getenv "BUDGETLENS_PROMPT_FILES") ",")))
