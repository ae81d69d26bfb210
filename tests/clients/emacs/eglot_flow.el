;;; eglot_flow.el --- Emacs 28 + eglot end to end, in batch mode  -*- lexical-binding: t; -*-
;; Like a user: open files with the config of editor-clients/emacs/budgetlens-eglot.el,
;; M-x eglot, hover, pick quick-fixes from `eglot-code-actions' (its completing-read menu
;; answered here), run the JSON quick-fix.  eglot has no code lenses.

(load (expand-file-name "eglot_setup.el" (file-name-directory load-file-name)) nil t)

(defun bl-diags ()
  (mapcar (lambda (d)
            (let ((lsp (cdr (assoc 'eglot-lsp-diag (eglot--diag-data d)))))
              (list (cons 'line (1- (line-number-at-pos (flymake-diagnostic-beg d))))
                    (cons 'code (plist-get lsp :code))
                    (cons 'type (symbol-name (flymake-diagnostic-type d)))
                    (cons 'text (flymake-diagnostic-text d)))))
          (flymake-diagnostics)))

(defun bl-diag (code)
  (cl-find-if (lambda (d) (equal (plist-get (cdr (assoc 'eglot-lsp-diag (eglot--diag-data d)))
                                            :code)
                                 code))
              (flymake-diagnostics)))

(defun bl-wait-diag (code present)
  (bl-wait (format "%s %s" code (if present "to appear" "to clear"))
           (lambda () (flymake-start) (if present (bl-diag code) (not (bl-diag code))))))

(defun bl-eglot (rel)
  (let ((buf (bl-find rel)))
    (unless (eglot-current-server) (call-interactively #'eglot))
    (bl-wait "eglot to connect" #'eglot-current-server)
    buf))

(defun bl-code-actions (diag pick)
  "Run `eglot-code-actions' on DIAG like M-x; PICK chooses a title. Return the titles."
  (let (offered (last-nonmenu-event ?a))
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt items &rest _)
                 (setq offered (mapcar #'car items))
                 (or (cl-find-if pick offered) ""))))
      (eglot-code-actions (flymake-diagnostic-beg diag) (flymake-diagnostic-end diag) nil t))
    offered))

(defvar bl-sections
 `((diagnostics
    . ,(lambda ()
         (bl-record 'emacs_version emacs-version)
         (bl-record 'eglot_version (package-desc-version (cadr (assq 'eglot package-alist))))
         (bl-eglot "pipelines/long_report.yaml")
         (bl-record 'root (project-root (eglot--project (eglot-current-server))))
         (bl-wait-diag "BL050" t)
         (bl-record 'pipeline_diagnostics (bl-diags))))
   (hover
    . ,(lambda ()
         (with-current-buffer (bl-find "pipelines/long_report.yaml")
           (goto-char (point-min)) (forward-line 4) (forward-char 4)
           (let* ((server (eglot-current-server))
                  (hover (jsonrpc-request server :textDocument/hover
                                          (eglot--TextDocumentPositionParams)))
                  (shown (eglot--hover-info (plist-get hover :contents))))
             (bl-record 'hover (list (cons 'kind (plist-get (plist-get hover :contents) :kind))
                                     (cons 'visible (bl-visible-text shown))))))))
   (quickfix
    . ,(lambda ()
         (with-current-buffer (bl-find "pipelines/long_report.yaml")
           (let ((diag (bl-diag "BL050")))
             (bl-record 'quickfixes_bl050
                        (bl-code-actions diag (lambda (title)
                                                (string-prefix-p "Clamp max_context_tokens" title)))))
           (bl-wait "the clamp to be applied" #'buffer-modified-p)
           (bl-wait-diag "BL050" nil)
           (bl-record 'pipeline_after_fix
                      (list (cons 'diagnostics (bl-diags))
                            (cons 'lines (split-string (buffer-string) "\n")))))))
   (json
    . ,(lambda ()
         (with-current-buffer (bl-eglot "responses/truncated.json")
           (bl-record 'json_root (project-root (eglot--project (eglot-current-server))))
           (bl-wait-diag "BL200" t)
           (bl-record 'json_diagnostics (bl-diags))
           (let ((before (length bl-messages))
                 (buffers (buffer-list)))
             (bl-record 'quickfixes_bl200
                        (bl-code-actions (bl-diag "BL200")
                                         (lambda (title) (string-match-p "hierarchy" title))))
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

(if (getenv "BUDGETLENS_EGLOT_NO_PROJECT_RULE")
    ;; eglot's own root without VCS: the file's folder (pipelines/), not the workspace
    (progn (remove-hook 'project-find-functions #'budgetlens-project)
           (bl-run (list (assq 'diagnostics bl-sections))))
  (bl-run bl-sections))
