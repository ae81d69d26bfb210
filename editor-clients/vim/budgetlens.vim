" budgetlens for Vim 8.2+/9 with ALE (https://github.com/dense-analysis/ale), as an LSP linter.
" Source this file from your vimrc after ALE is loaded:
"
"   packadd! ale                      " Debian's vim-ale, or your plugin manager's ALE
"   source /path/to/budgetlens/editor-clients/vim/budgetlens.vim
"
" Options (set before sourcing):
"   g:budgetlens_executable  the server command (default 'budgetlens'; `budgetlens serve` runs)
"   g:budgetlens_settings    a Dictionary sent as initializationOptions, e.g.
"                            {'policy': 'auto_clamp', 'hierarchyBudget': 2000}
" What you get: diagnostics (ALE's signs and loclist), hover (:ALEHover), quick-fixes
" (:ALECodeAction), and the results of commands as messages. ALE has no code lenses.

function! BudgetlensProjectRoot(buffer) abort
  " the nearest folder holding config.json (the CLI finds the same one)
  let l:config = ale#path#FindNearestFile(a:buffer, 'config.json')
  return empty(l:config) ? '' : fnamemodify(l:config, ':h')
endfunction

function! BudgetlensInitOptions(buffer) abort
  let l:settings = get(g:, 'budgetlens_settings', {})
  " an empty Dictionary is sent as {} (an object), as the server expects
  return l:settings
endfunction

for s:filetype in ['yaml', 'json', 'text']
  call ale#linter#Define(s:filetype, {
  \   'name': 'budgetlens',
  \   'lsp': 'stdio',
  \   'executable': {buffer -> get(g:, 'budgetlens_executable', 'budgetlens')},
  \   'command': '%e serve',
  \   'project_root': function('BudgetlensProjectRoot'),
  \   'initialization_options': function('BudgetlensInitOptions'),
  \})
endfor
unlet s:filetype
