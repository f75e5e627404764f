package client

import "context"

// TopicNames is the cluster's topic names; none when no node answers.
func (g Config) TopicNames(ctx context.Context) []string {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return nil
	}
	defer done()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return nil
	}
	return topics.Names()
}

// GroupNames is the cluster's consumer group names, of the brokers that
// answered; none when no node answers.
func (g Config) GroupNames(ctx context.Context) []string {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return nil
	}
	defer done()
	groups, _ := adm.ListGroups(ctx) // what answered is worth offering
	return groups.Groups()
}
