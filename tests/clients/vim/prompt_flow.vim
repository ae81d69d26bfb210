" Vim + ALE on prompt files in their own formats, in a folder without config.json: open
" each file named in $BUDGETLENS_PROMPT_FILES (comma-separated) like a user, and record its
" filetype and ALE's diagnostics once BL070 arrives. Observations go to $BUDGETLENS_RESULTS
" for test_vim_ale_prompts.py. Every wait has a deadline.
let s:results = {'steps': [], 'done': v:false, 'errors': {}, 'prompt_files': {}}
" a hang guard only, from the test (tests/waiting.py)
let s:timeout_ms = empty($BUDGETLENS_TEST_WAIT_MS) ? 30000 : str2nr($BUDGETLENS_TEST_WAIT_MS)

function! s:Flush() abort
  call writefile([json_encode(s:results)], $BUDGETLENS_RESULTS)
endfunction

function! s:Codes(buffer) abort
  return map(copy(ale#engine#GetLoclist(a:buffer)), 'get(v:val, "code", "")')
endfunction

function! s:Open(name) abort
  execute 'edit ' . fnameescape($BUDGETLENS_WORKSPACE . '/' . a:name)
  let l:buffer = bufnr('')
  let l:seen = {'filetype': &filetype, 'root': BudgetlensProjectRoot(l:buffer)}
  let s:results.prompt_files[a:name] = l:seen
  call s:Flush()
  let l:waited = 0
  while index(s:Codes(l:buffer), 'BL070') < 0
    if l:waited >= s:timeout_ms
      throw 'timed out after ' . s:timeout_ms . ' ms waiting for BL070 on ' . a:name
    endif
    sleep 20m
    let l:waited += 20
  endwhile
  let l:seen.codes = s:Codes(l:buffer)
  let l:seen.diagnostics = map(copy(ale#engine#GetLoclist(l:buffer)),
  \ '{"lnum": v:val.lnum, "code": get(v:val, "code", ""), "type": v:val.type,'
  \ . ' "text": v:val.text, "linter": v:val.linter_name}')
  call add(s:results.steps, a:name)
  call s:Flush()
endfunction

try
  for s:name in split($BUDGETLENS_PROMPT_FILES, ',')
    try
      call s:Open(s:name)
    catch
      let s:results.errors[s:name] = v:exception . ' at ' . v:throwpoint
      call s:Flush()
    endtry
  endfor
  let s:results.done = v:true
catch
  let s:results.error = v:exception . ' at ' . v:throwpoint
endtry
let s:results.messages = execute('messages')
call s:Flush()
qall!
