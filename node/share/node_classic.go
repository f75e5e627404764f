package share

// ClassicNotFound is the message of classic DescribeGroups' GROUP_ID_NOT_FOUND
// (v6+) for id, as Kafka 4.2 words it: its group coordinator finds a share
// group under the id, which is "not a classic group", or nothing at all.
// Below v6 Kafka answers a share group's id as any unknown group: Dead, no
// error.
func (n *Node) ClassicNotFound(id string) string {
	if coord, _ := n.Get(); coord.Has(id) {
		return "Group " + id + " is not a classic group."
	}
	return "Group " + id + " not found."
}
