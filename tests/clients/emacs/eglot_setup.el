;;; eglot_setup.el --- what every eglot flow loads first  -*- lexical-binding: t; -*-
;; The user's config (editor-clients/emacs/budgetlens-eglot.el), yaml-mode and harness.el;
;; eglot connects synchronously and never reconnects.

(package-initialize)
(require 'yaml-mode)
(load (expand-file-name "editor-clients/emacs/budgetlens-eglot.el" (getenv "BUDGETLENS_REPO")))
(add-to-list 'load-path (file-name-directory load-file-name))
(require 'harness)
(setq eglot-sync-connect t eglot-autoreconnect nil)
