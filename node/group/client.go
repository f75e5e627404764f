package group

import "net"

// ClientOf is who sent a request, as DescribeGroups shows it: the request
// header's client id and the connection's remote host.
func ClientOf(clientID *string, remote net.Addr) Client {
	var c Client
	if clientID != nil {
		c.ID = *clientID
	}
	if remote != nil {
		host := remote.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		c.Host = "/" + host
	}
	return c
}
