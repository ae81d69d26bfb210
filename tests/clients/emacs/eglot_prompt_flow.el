;;; eglot_prompt_flow.el --- Emacs 28 + eglot on prompt files, in batch mode  -*- lexical-binding: t; -*-
;; Like a user with the config of editor-clients/emacs/budgetlens-eglot.el: open each file
;; named in $BUDGETLENS_PROMPT_FILES (comma-separated) in a folder without config.json,
;; M-x eglot, and record its major mode and flymake's diagnostics once BL070 arrives.

(load (expand-file-name "eglot_setup.el" (file-name-directory load-file-name)) nil t)

(defun bl-codes ()
  (mapcar (lambda (d) (plist-get (cdr (assoc 'eglot-lsp-diag (eglot--diag-data d))) :code))
          (flymake-diagnostics)))

(defun bl-prompt-file (name)
  (with-current-buffer (bl-find name)
    (unless (eglot-current-server) (call-interactively #'eglot))
    (bl-wait "eglot to connect" #'eglot-current-server)
    (bl-wait (format "BL070 on %s" name)
             (lambda () (flymake-start) (member "BL070" (bl-codes))))
    (bl-record (intern name)
               (list (cons 'mode (symbol-name major-mode))
                     (cons 'codes (bl-codes))
                     (cons 'texts (mapcar #'flymake-diagnostic-text (flymake-diagnostics)))))))

(bl-run (mapcar (lambda (name) (cons (intern name) (lambda () (bl-prompt-file name))))
                (split-string (getenv "BUDGETLENS_PROMPT_FILES") ",")))
