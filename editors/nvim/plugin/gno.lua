if vim.g.loaded_gno then
  return
end
vim.g.loaded_gno = true

vim.api.nvim_create_user_command('Gno', function(opts)
  require('gno').to_quickfix('search', opts.args)
end, { nargs = '+', desc = 'gno keyword search into the quickfix list' })

vim.api.nvim_create_user_command('GnoQuery', function(opts)
  require('gno').to_quickfix('query', opts.args)
end, { nargs = '+', desc = 'gno hybrid search into the quickfix list' })

vim.api.nvim_create_user_command('GnoSymbol', function(opts)
  require('gno').definition(opts.args)
end, { nargs = '?', desc = 'gno: where a name (default: the word under the cursor) is defined' })

vim.api.nvim_create_user_command('GnoPick', function(opts)
  require('gno.picker').pick(opts.args)
end, { nargs = '*', desc = 'gno live picker' })

vim.api.nvim_create_autocmd('BufReadCmd', {
  pattern = 'gno://*',
  callback = function(ev)
    require('gno').read_text(ev.buf, ev.match)
  end,
  desc = "gno: a converted document's text (a web page's, a PDF's), as gnod holds it",
})
