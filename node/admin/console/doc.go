// Package console is the live web console every node serves from its admin
// listener: hand-written HTML, CSS and JavaScript embedded in the binary
// (assets/, no build step, no third-party code; charts are SVG the page
// draws itself), and the little the admin API keeps for it that the other
// endpoints do not have:
//
//   - a bounded history, one point a second for the last few minutes, of
//     each partition this node leads (offsets, size, produce and fetch
//     rates from the node's existing counters) and of the committed offsets
//     of each group it coordinates (history.go). It is sampled only while
//     someone reads it: the first read starts the sampler, which stops and
//     drops its points once nobody has read for Config.IdleStop, so a node
//     nobody looks at pays nothing for it;
//   - the cluster-wide view of that history, this node's merged with its
//     live peers' (state.go), from which the page draws rates and lag;
//   - the last membership events, for the cluster view's timeline (events.go).
//
// Everything it serves is read-only and goes through the admin API's access
// check; the static assets hold no data and are served without a
// credential so that the page can ask for the token.
//
// Locking. History.mu guards the series and the sampler's running state;
// it is never held while the Source is asked for a sample (a sample takes
// partition and group locks of its own) nor across I/O. Events.mu guards
// the event ring. Neither is taken under the other.
package console
