;;; lsp_mode_setup.el --- what every lsp-mode flow loads first  -*- lexical-binding: t; -*-
;; yaml-mode, lsp-mode's settings for a batch run (no watchers, no headerline or modeline,
;; flymake, no restart), the user's config (editor-clients/emacs/budgetlens-lsp-mode.el) and
;; harness.el.  A flow sets any other lsp-mode variable before it loads this file.

(package-initialize)
(require 'yaml-mode)
(setq lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
      lsp-enable-file-watchers nil
      lsp-headerline-breadcrumb-enable nil
      lsp-modeline-code-actions-enable nil
      lsp-modeline-diagnostics-enable nil
      lsp-diagnostics-provider :flymake
      lsp-restart 'ignore
      lsp-enable-snippet nil)
(load (expand-file-name "editor-clients/emacs/budgetlens-lsp-mode.el" (getenv "BUDGETLENS_REPO")))
(add-to-list 'load-path (file-name-directory load-file-name))
(require 'harness)
