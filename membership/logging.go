package membership

import (
	"bytes"
	"log"

	"github.com/sirupsen/logrus"
)

// logBridge turns the standard-library log lines of Serf and memberlist
// ("[WARN] memberlist: ...") into logrus entries at the matching level.
type logBridge struct {
	log logrus.FieldLogger
}

func newStdLogger(l logrus.FieldLogger, component string) *log.Logger {
	return log.New(&logBridge{log: l.WithField("component", component)}, "", 0)
}

func (b *logBridge) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level, msg := logrus.InfoLevel, line
	for _, l := range []struct {
		prefix string
		level  logrus.Level
	}{
		{"[ERR]", logrus.ErrorLevel},
		{"[ERROR]", logrus.ErrorLevel},
		{"[WARN]", logrus.WarnLevel},
		{"[INFO]", logrus.InfoLevel},
		{"[DEBUG]", logrus.DebugLevel},
		{"[TRACE]", logrus.TraceLevel},
	} {
		if bytes.HasPrefix(line, []byte(l.prefix)) {
			level, msg = l.level, bytes.TrimSpace(line[len(l.prefix):])
			break
		}
	}
	switch level {
	case logrus.ErrorLevel:
		b.log.Error(string(msg))
	case logrus.WarnLevel:
		b.log.Warn(string(msg))
	case logrus.DebugLevel, logrus.TraceLevel:
		b.log.Debug(string(msg))
	default:
		b.log.Info(string(msg))
	}
	return len(p), nil
}
