package main

import (
	"net"
	"sync"
	"sync/atomic"
)

// limitListener caps the connections open at once (ALBUMS_MAX_CONNS). With
// every slot taken, Accept waits until a connection closes: new connections
// queue in the kernel's listen backlog (past that, the client's connect times
// out) instead of each costing the server a goroutine and its buffers. It is
// golang.org/x/net/netutil.LimitListener, which this stdlib-only module
// cannot import, plus the counts /metrics reports.
type limitListener struct {
	net.Listener
	sem     chan struct{} // one token per open connection
	done    chan struct{} // closed by Close, to release a waiting Accept
	once    sync.Once
	open    atomic.Int64 // connections open now
	limited atomic.Int64 // times Accept found every slot taken and waited
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.limited.Add(1)
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	return &limitConn{Conn: c, l: l}, nil
}

// Close stops accepting, including an Accept waiting for a free slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back when closed, once however often Close is
// called.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}

// CloseWrite passes through to the TCP connection. net/http uses it to send a
// FIN before closing after an error response (413, 408) to a request whose
// body it did not read, so the client gets the response rather than a reset.
// Embedding net.Conn alone would hide it.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
