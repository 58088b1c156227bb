// The name of a repository's config file, in a module that loads nothing: a command that only asks
// whether the file is there (show, before it lists the declared checkers) loads the config's reader
// and its schemas only when there is a file to read.
export const CONFIG_FILE = 'genjob.config.json';
