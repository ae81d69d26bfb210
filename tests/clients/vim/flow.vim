" Vim + ALE end to end, like a user: open files, :ALEHover, pick code actions from ALE's
" code-action menu callback (the one its popup menu uses). Observations go to
" $BUDGETLENS_RESULTS for test_vim_ale.py. Every wait has a deadline.
let s:results = {'steps': [], 'done': v:false, 'errors': {}}
" a hang guard only, from the test (tests/waiting.py)
let s:timeout_ms = empty($BUDGETLENS_TEST_WAIT_MS) ? 30000 : str2nr($BUDGETLENS_TEST_WAIT_MS)

function! s:Flush() abort
  call writefile([json_encode(s:results)], $BUDGETLENS_RESULTS)
endfunction

function! s:Record(key, value) abort
  let s:results[a:key] = a:value
  call add(s:results.steps, a:key)
  call s:Flush()
endfunction

function! s:Wait(what, expr) abort
  let l:waited = 0
  while !eval(a:expr)
    if l:waited >= s:timeout_ms
      throw 'timed out after ' . s:timeout_ms . ' ms waiting for ' . a:what
    endif
    sleep 20m
    let l:waited += 20
  endwhile
endfunction

function! s:Loclist(buffer) abort
  let l:out = []
  for l:item in ale#engine#GetLoclist(a:buffer)
    call add(l:out, {'lnum': l:item.lnum, 'col': l:item.col, 'code': get(l:item, 'code', ''),
    \ 'type': l:item.type, 'text': l:item.text, 'linter': l:item.linter_name})
  endfor
  return l:out
endfunction

function! s:Has(buffer, code) abort
  for l:item in ale#engine#GetLoclist(a:buffer)
    if get(l:item, 'code', '') is# a:code
      return l:item
    endif
  endfor
  return {}
endfunction

function! s:PreviewLines() abort
  for l:win in range(1, winnr('$'))
    if getwinvar(l:win, '&previewwindow')
      return getbufline(winbufnr(l:win), 1, '$')
    endif
  endfor
  return []
endfunction

let s:menu = v:null
function! s:OnMenu(data, items) abort
  let s:menu = {'data': a:data, 'items': a:items}
endfunction

" ALE's code-action menu for the cursor position: the titles offered and the items
function! s:CodeActions() abort
  let s:menu = v:null
  call ale#codefix#Execute(0, function('s:OnMenu'))
  call s:Wait('the code actions', 's:menu isnot v:null')
  return s:menu
endfunction

function! s:Titles(menu) abort
  return map(copy(a:menu.items), 'v:val[1].title')
endfunction

function! s:Apply(menu, pattern) abort
  for l:item in a:menu.items
    if l:item[1].title =~# a:pattern
      call ale#codefix#ApplyLSPCodeAction(a:menu.data, l:item[1])
      return l:item[1].title
    endif
  endfor
  throw 'no code action matches ' . a:pattern . ': ' . string(s:Titles(a:menu))
endfunction

" Each section runs on its own: a failure is recorded under its name and the next one runs.
function! s:Section(name) abort
  try
    call function('s:' . a:name)()
  catch
    let s:results.errors[a:name] = v:exception . ' at ' . v:throwpoint
    call s:Flush()
  endtry
endfunction

function! s:Diagnostics() abort
  call s:Record('vim_version', v:version)
  call s:Record('ale_loaded', exists('g:loaded_ale') ? 1 : 0)
  " BL050 on the over-budget pipeline
  execute 'edit ' . fnameescape($BUDGETLENS_WORKSPACE . '/pipelines/long_report.yaml')
  let l:pipeline = bufnr('')
  call s:Wait('BL050 from ALE', '!empty(s:Has(' . l:pipeline . ', "BL050"))')
  call s:Record('pipeline_diagnostics', s:Loclist(l:pipeline))
endfunction

function! s:Hover() abort
  execute 'buffer ' . bufnr($BUDGETLENS_WORKSPACE . '/pipelines/long_report.yaml')
  " :ALEHover on max_context_tokens (line 5), into the preview window
  call cursor(5, 5)
  ALEHover
  call s:Wait('the hover text', '!empty(s:PreviewLines())')
  call s:Record('hover', s:PreviewLines())
  pclose
endfunction

function! s:QuickFix() abort
  let l:pipeline = bufnr($BUDGETLENS_WORKSPACE . '/pipelines/long_report.yaml')
  execute 'buffer ' . l:pipeline
  " the quick-fixes of BL050 at the diagnostic, then the clamp applied
  let l:bl050 = s:Has(l:pipeline, 'BL050')
  call cursor(l:bl050.lnum, l:bl050.col)
  let l:menu = s:CodeActions()
  call s:Record('quickfixes_bl050', s:Titles(l:menu))
  call s:Record('applied_bl050', s:Apply(l:menu, '^Clamp max_context_tokens'))
  call s:Wait('the clamp to be applied', 'getbufvar(' . l:pipeline . ', "&modified")')
  " ALE lints again after a change (as after typing)
  ALELint
  call s:Wait('BL050 to clear', 'empty(s:Has(' . l:pipeline . ', "BL050"))')
  call s:Record('pipeline_after_fix', {'diagnostics': s:Loclist(l:pipeline),
  \ 'lines': getbufline(l:pipeline, 1, '$')})
endfunction

function! s:Json() abort
  " BL200 on the truncated JSON; its quick-fix runs the hierarchy command
  execute 'edit ' . fnameescape($BUDGETLENS_WORKSPACE . '/responses/truncated.json')
  let l:json = bufnr('')
  call s:Wait('BL200 from ALE', '!empty(s:Has(' . l:json . ', "BL200"))')
  call s:Record('json_diagnostics', s:Loclist(l:json))
  let l:bl200 = s:Has(l:json, 'BL200')
  call cursor(l:bl200.lnum, max([l:bl200.col, 1]))
  let l:menu = s:CodeActions()
  call s:Record('quickfixes_bl200', s:Titles(l:menu))
  messages clear
  call s:Record('applied_bl200', s:Apply(l:menu, 'hierarchy'))
  " a long server message (window/showMessage) goes to ALE's preview window, a short one
  " to the command line
  call s:Wait('the hierarchy context to be shown',
  \ 'execute("messages") =~# "<<<CUT>>>" || join(s:PreviewLines(), "\n") =~# "<<<CUT>>>"')
  call s:Record('hierarchy', {'messages': execute('messages'), 'preview': s:PreviewLines()})
endfunction

try
  for s:name in ['Diagnostics', 'Hover', 'QuickFix', 'Json']
    call s:Section(s:name)
  endfor
  let s:results.done = v:true
catch
  let s:results.error = v:exception . ' at ' . v:throwpoint
endtry
let s:results.messages = execute('messages')
call s:Flush()
qall!
