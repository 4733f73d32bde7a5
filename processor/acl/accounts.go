package acl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	jacl "rmqd/compat/acl"
)

// ReadAccounts reads the accounts of the ACL files Manager would load for
// path (the acl directory's files, then path), without watching or creating
// anything: what 5.3's AuthMigrator imports into ACL 2.0. An access key
// already seen in an earlier file is skipped, as PlainPermissionManager
// .getAllAclConfig does; missing files add nothing; a file that is no YAML
// is an error (Java's broker then fails to start).
func ReadAccounts(path string) ([]jacl.Account, error) {
	path = filepath.Clean(path)
	var out []jacl.Account
	seen := map[string]bool{}
	for _, p := range filePaths(path, filepath.Join(filepath.Dir(path), "acl")) {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("acl: %w", err)
		}
		f, err := jacl.ParseFile(b)
		if err != nil {
			return nil, fmt.Errorf("acl: %s: %w", p, err)
		}
		for _, a := range f.Accounts {
			if !seen[a.AccessKey] {
				seen[a.AccessKey] = true
				out = append(out, a)
			}
		}
	}
	return out, nil
}
