;;; lsp_mode_flow.el --- Emacs 28 + lsp-mode 8.0 end to end, in batch mode  -*- lexical-binding: t; -*-
;; Like a user: the config of editor-clients/emacs/budgetlens-lsp-mode.el, the workspace
;; imported as the project (what lsp-mode's first prompt does), M-x lsp, lenses on, hover
;; (M-x lsp-describe-thing-at-point), quick-fixes from M-x lsp-execute-code-action (its
;; completing-read menu answered here), the JSON quick-fix.

(setq lsp-lens-enable t
      lsp-auto-execute-action nil)  ; show the menu even for one action (recorded here)
(load (expand-file-name "lsp_mode_setup.el" (file-name-directory load-file-name)) nil t)

(defun bl-code-of (flymake-diag)
  "The LSP code of FLYMAKE-DIAG (lsp-mode shows only the message in flymake)."
  (cl-loop for d in (gethash (lsp--fix-path-casing buffer-file-name) (lsp-diagnostics t))
           when (equal (lsp:diagnostic-message d) (flymake-diagnostic-text flymake-diag))
           return (lsp:diagnostic-code? d)))

(defun bl-diags ()
  (mapcar (lambda (d)
            (list (cons 'line (1- (line-number-at-pos (flymake-diagnostic-beg d))))
                  (cons 'code (bl-code-of d))
                  (cons 'type (symbol-name (flymake-diagnostic-type d)))
                  (cons 'text (flymake-diagnostic-text d))))
          (flymake-diagnostics)))

(defun bl-diag (code)
  "The diagnostic with CODE that flymake shows."
  (cl-find-if (lambda (d) (equal (bl-code-of d) code)) (flymake-diagnostics)))

(defun bl-wait-diag (code present)
  (bl-wait (format "%s %s" code (if present "to appear" "to clear"))
           (lambda () (flymake-start)
             (if present (bl-diag code) (not (bl-diag code))))))

(defun bl-lenses ()
  (let (out)
    (dolist (ov (overlays-in (point-min) (point-max)))
      (when (overlay-get ov 'lsp-lens)
        (push (string-trim (substring-no-properties
                            (or (overlay-get ov 'before-string)
                                (overlay-get ov 'after-string) "")))
              out)))
    out))

(defun bl-lsp (rel)
  (let ((buf (bl-find rel)))
    (lsp)
    (bl-wait "lsp-mode to start budgetlens"
             (lambda () (cl-some (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                 (lsp-workspaces))))
    buf))

(defun bl-code-actions (pick)
  "M-x lsp-execute-code-action at point; PICK chooses a title. Return the titles offered."
  (let (offered)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt items &rest _)
                 (setq offered (mapcar (lambda (i) (if (consp i) (car i) i)) items))
                 (or (cl-find-if pick offered) ""))))
      (call-interactively #'lsp-execute-code-action))
    offered))

(lsp-workspace-folders-add bl-workspace)

(bl-run
 `((diagnostics
    . ,(lambda ()
         (bl-record 'emacs_version emacs-version)
         (bl-record 'lsp_mode_version (package-desc-version (cadr (assq 'lsp-mode package-alist))))
         (bl-lsp "pipelines/long_report.yaml")
         (bl-record 'root (lsp-workspace-root))
         (bl-wait-diag "BL050" t)
         (bl-record 'pipeline_diagnostics (bl-diags))))
   (lenses
    . ,(lambda ()
         (with-current-buffer (bl-find "pipelines/long_report.yaml")
           (bl-wait "code lenses" (lambda () (bl-lenses)))
           (bl-record 'lenses_before (bl-lenses)))))
   (hover
    . ,(lambda ()
         (with-current-buffer (bl-find "pipelines/long_report.yaml")
           (goto-char (point-min)) (forward-line 4) (forward-char 4)
           (lsp-describe-thing-at-point)
           (bl-wait "the hover buffer" (lambda () (get-buffer "*lsp-help*")))
           (bl-record 'hover (bl-visible-text (with-current-buffer "*lsp-help*"
                                                (buffer-string)))))))
   (quickfix
    . ,(lambda ()
         (with-current-buffer (bl-find "pipelines/long_report.yaml")
           (goto-char (flymake-diagnostic-beg (bl-diag "BL050")))
           (bl-record 'quickfixes_bl050
                      (bl-code-actions (lambda (title)
                                         (string-prefix-p "Clamp max_context_tokens" title))))
           (bl-wait "the clamp to be applied" #'buffer-modified-p)
           (bl-wait-diag "BL050" nil)
           (bl-record 'pipeline_after_fix
                      (list (cons 'diagnostics (bl-diags))
                            (cons 'lines (split-string (buffer-string) "\n"))))
           ;; the lenses follow the fix without saving
           (bl-wait "the lenses to show the clamped budget"
                    (lambda () (cl-some (lambda (l) (string-match-p "(0 free)" l)) (bl-lenses))))
           (bl-record 'lenses_after_fix (bl-lenses)))))
   (json
    . ,(lambda ()
         (with-current-buffer (bl-lsp "responses/truncated.json")
           (bl-record 'json_root (lsp-workspace-root))
           (bl-wait-diag "BL200" t)
           (bl-record 'json_diagnostics (bl-diags))
           (goto-char (flymake-diagnostic-beg (bl-diag "BL200")))
           (let ((before (length bl-messages))
                 (buffers (buffer-list)))
             (bl-record 'quickfixes_bl200
                        (bl-code-actions (lambda (title) (string-match-p "hierarchy" title))))
             (bl-wait "the hierarchy context to be shown"
                      (lambda ()
                        (or (cl-find-if (lambda (m) (string-match-p "<<<CUT>>>" m))
                                        (butlast bl-messages before))
                            (cl-find-if (lambda (b) (and (not (memq b buffers))
                                                         (buffer-file-name b)))
                                        (buffer-list)))))
             (let ((shown (cl-find-if (lambda (b) (and (not (memq b buffers))
                                                       (buffer-file-name b)))
                                      (buffer-list))))
               (bl-record 'hierarchy
                          (list (cons 'messages (butlast bl-messages before))
                                (cons 'file (and shown (buffer-file-name shown)))
                                (cons 'read_only (and shown (buffer-local-value
                                                             'buffer-read-only shown)))
                                (cons 'text (and shown (with-current-buffer shown
                                                         (buffer-string)))))))))))))
