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
" Prompt files (*.prompt.yml, *.prompty, *.prompt) are served with or without a config.json.
" What you get: diagnostics (ALE's signs and loclist), hover (:ALEHover), quick-fixes
" (:ALECodeAction), and the results of commands as messages. ALE has no code lenses.

function! BudgetlensIsPromptFile(buffer) abort
  " prompt files in their own formats: GitHub Models, Prompty, Dotprompt
  return bufname(a:buffer) =~# '\v(\.prompt\.ya?ml|\.prompty|\.prompt)$'
endfunction

function! BudgetlensProjectRoot(buffer) abort
  " the nearest folder holding config.json (the CLI finds the same one); a prompt file needs
  " none: then the nearest pyproject.toml's folder, else the file's own folder
  let l:config = ale#path#FindNearestFile(a:buffer, 'config.json')
  if !empty(l:config)
    return fnamemodify(l:config, ':h')
  endif
  if !BudgetlensIsPromptFile(a:buffer)
    return ''
  endif
  let l:pyproject = ale#path#FindNearestFile(a:buffer, 'pyproject.toml')
  return fnamemodify(empty(l:pyproject) ? bufname(a:buffer) : l:pyproject, ':p:h')
endfunction

function! BudgetlensInitOptions(buffer) abort
  let l:settings = get(g:, 'budgetlens_settings', {})
  " an empty Dictionary is sent as {} (an object), as the server expects
  return l:settings
endfunction

for s:filetype in ['yaml', 'json', 'text', 'prompty', 'dotprompt']
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

" Vim gives *.prompty and *.prompt no filetype (ALE skips such buffers): they get 'prompty'
" and 'dotprompt', unless another plugin set one first (:setfiletype). Then budgetlens runs
" alongside that filetype's linters (b:ale_linter_aliases). *.prompt.yml is 'yaml' already.
function! s:PromptFile(filetype) abort
  if empty(&filetype)
    execute 'setfiletype ' . a:filetype
  elseif &filetype isnot# a:filetype && !exists('b:ale_linter_aliases')
    let b:ale_linter_aliases = [&filetype, a:filetype]
  endif
endfunction

augroup budgetlens_prompt_files
  autocmd!
  autocmd BufNewFile,BufRead *.prompty call s:PromptFile('prompty')
  autocmd BufNewFile,BufRead *.prompt call s:PromptFile('dotprompt')
augroup END
