package harness

import "syscall"

func processGroupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}
