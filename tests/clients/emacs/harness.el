;;; harness.el --- helpers for the batch-mode Emacs client tests  -*- lexical-binding: t; -*-
;; Results go to $BUDGETLENS_RESULTS after every step (a timeout still shows how far the
;; script got); each section runs on its own and a failure is recorded under its name; every
;; wait has a deadline; the script always ends with `kill-emacs'.

(require 'json)
(require 'cl-lib)
(require 'subr-x)

(defvar bl-results (list (cons 'steps nil) (cons 'errors nil) (cons 'done :json-false)))
(defvar bl-timeout  ; a hang guard only: seconds, from the test (tests/waiting.py)
  (/ (string-to-number (or (getenv "BUDGETLENS_TEST_WAIT_MS") "30000")) 1000.0))
(defvar bl-workspace (file-name-as-directory (getenv "BUDGETLENS_WORKSPACE")))
(defvar bl-messages nil "Every message shown in the echo area, newest first.")

(defun bl-flush ()
  (let ((json-encoding-pretty-print nil)
        (coding-system-for-write 'utf-8))
    (write-region (json-encode bl-results) nil (getenv "BUDGETLENS_RESULTS") nil 'silent)))

(defun bl-record (key value)
  (setf (alist-get key bl-results) value)
  (setf (alist-get 'steps bl-results) (append (alist-get 'steps bl-results)
                                              (list (symbol-name key))))
  (bl-flush))

(defun bl-idle ()
  "Run the idle timers, as when a user pauses: batch-mode Emacs is never idle, and the
clients send didChange and refresh diagnostics from idle timers."
  (dolist (timer (copy-sequence timer-idle-list))
    (when (memq timer timer-idle-list)
      (timer-event-handler timer))))  ; it takes the timer off the list and runs it

(defun bl-wait (what predicate)
  "Wait for PREDICATE (processing server output, timers and idle timers); error naming
WHAT on timeout."
  (let ((deadline (+ (float-time) bl-timeout)))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (error "timed out after %ss waiting for %s" bl-timeout what))
      (accept-process-output nil 0.05)
      (bl-idle))))

(defun bl-section (name fn)
  (condition-case err
      (funcall fn)
    (error (setf (alist-get name bl-results) nil)
           (setf (alist-get 'errors bl-results)
                 (cons (cons name (error-message-string err)) (alist-get 'errors bl-results)))
           (bl-flush))))

(defun bl-visible-text (string)
  "STRING as displayed: characters with an `invisible' property left out."
  (let ((out "") (i 0))
    (while (< i (length string))
      (let ((next (or (next-single-property-change i 'invisible string) (length string))))
        (unless (get-text-property i 'invisible string)
          (setq out (concat out (substring-no-properties string i next))))
        (setq i next)))
    out))

(defun bl-record-message (orig format-string &rest args)
  "Around `message': keep what the user would see in the echo area."
  (when format-string
    (push (substring-no-properties (apply #'format-message format-string args)) bl-messages))
  (apply orig format-string args))

(advice-add 'message :around #'bl-record-message)

(defun bl-run (sections)
  "Run SECTIONS ((name . fn) ...) in order, then write the results and exit."
  (condition-case err
      (progn
        (dolist (s sections) (bl-section (car s) (cdr s)))
        (setf (alist-get 'done bl-results) t))
    (error (setf (alist-get 'error bl-results) (error-message-string err))))
  (setf (alist-get 'messages bl-results) (reverse bl-messages))
  (bl-flush)
  (kill-emacs 0))

(defun bl-find (rel)
  (find-file (expand-file-name rel bl-workspace))
  (current-buffer))

(provide 'harness)
