package ha

// SetLocalBrokerID sets this broker's id once the controller assigned it (Java's
// haService.setLocalBrokerId after registration): a master that never was a
// slave learns its own id here, so it keeps itself in the sync state set.
func (a *AutoSwitch) SetLocalBrokerID(id int64) {
	a.mu.Lock()
	a.localID = id
	a.mu.Unlock()
}
