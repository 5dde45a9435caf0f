/* Loopback HTTP server for tests (see tests/lib/promserve.h). */
#include "promserve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct route {
	char *path;
	char *body;
	size_t len;
	int delay_ms;
};

struct gl_test_server {
	int lfd;
	int stop_pipe[2];
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	int active;
	size_t requests;
	struct route *r;
	size_t nr, cap;
};

struct conn {
	struct gl_test_server *s;
	int fd;
};

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *serve_conn(void *arg)
{
	struct conn *c = arg;
	struct gl_test_server *s = c->s;
	char req[8192], path[1024] = "", head[256];
	size_t n = 0;
	char *body = NULL;
	size_t len = 0;
	int delay = 0, found = 0;

	while (n < sizeof req - 1) {
		ssize_t k = recv(c->fd, req + n, sizeof req - 1 - n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[n] = '\0';
	if (sscanf(req, "GET %1023s ", path) == 1) {
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < s->nr; i++) {
			if (!strcmp(s->r[i].path, path)) {
				/* a copy: the route may be replaced meanwhile */
				body = malloc(s->r[i].len + 1);
				memcpy(body, s->r[i].body, s->r[i].len);
				len = s->r[i].len;
				delay = s->r[i].delay_ms;
				found = 1;
				break;
			}
		}
		s->requests++;
		pthread_mutex_unlock(&s->mu);
	}
	if (delay > 0) {
		/* interruptible: stop() must not wait for a slow answer */
		struct pollfd p = {s->stop_pipe[0], POLLIN, 0};
		if (poll(&p, 1, delay) != 0)
			found = -1;
	}
	if (found > 0) {
		int h = snprintf(head, sizeof head,
				 "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %zu\r\n"
				 "Connection: close\r\n\r\n",
				 len);
		if (send_all(c->fd, head, (size_t)h) == 0)
			(void)send_all(c->fd, body, len);
	} else if (found == 0) {
		static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
		(void)send_all(c->fd, nf, sizeof nf - 1);
	}
	free(body);
	close(c->fd);
	free(c);
	pthread_mutex_lock(&s->mu);
	if (--s->active == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *accept_loop(void *arg)
{
	struct gl_test_server *s = arg;
	for (;;) {
		struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->stop_pipe[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			int fd = accept(s->lfd, NULL, NULL);
			pthread_t t;
			struct conn *c;
			if (fd < 0)
				continue;
			c = malloc(sizeof *c);
			c->s = s;
			c->fd = fd;
			pthread_mutex_lock(&s->mu);
			s->active++;
			pthread_mutex_unlock(&s->mu);
			if (pthread_create(&t, NULL, serve_conn, c) != 0) {
				close(fd);
				free(c);
				pthread_mutex_lock(&s->mu);
				s->active--;
				pthread_mutex_unlock(&s->mu);
				continue;
			}
			pthread_detach(t);
		}
	}
	return NULL;
}

int gl_test_server_start(struct gl_test_server **out, int *port)
{
	struct gl_test_server *s = calloc(1, sizeof *s);
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int one = 1;

	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->lfd < 0 || pipe(s->stop_pipe) != 0)
		goto fail;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0;
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 1024) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0)
		goto fail;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->idle, NULL);
	if (pthread_create(&s->acceptor, NULL, accept_loop, s) != 0)
		goto fail;
	*port = ntohs(a.sin_port);
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
	return -1;
}

void gl_test_server_route(struct gl_test_server *s, const char *path, const char *body, size_t len, int delay_ms)
{
	struct route *r = NULL;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->r[i].path, path))
			r = &s->r[i];
	if (!r) {
		if (s->nr == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->r = realloc(s->r, s->cap * sizeof *s->r);
		}
		r = &s->r[s->nr++];
		r->path = strdup(path);
	} else {
		free(r->body);
	}
	r->body = malloc(len + 1);
	memcpy(r->body, body, len);
	r->len = len;
	r->delay_ms = delay_ms;
	pthread_mutex_unlock(&s->mu);
}

size_t gl_test_server_requests(struct gl_test_server *s)
{
	size_t n;
	pthread_mutex_lock(&s->mu);
	n = s->requests;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void gl_test_server_stop(struct gl_test_server *s)
{
	if (!s)
		return;
	if (write(s->stop_pipe[1], "x", 1) != 1) {
		/* the acceptor then only stops at exit */
	}
	pthread_join(s->acceptor, NULL);
	close(s->lfd);
	pthread_mutex_lock(&s->mu);
	while (s->active > 0)
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	for (size_t i = 0; i < s->nr; i++) {
		free(s->r[i].path);
		free(s->r[i].body);
	}
	free(s->r);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->idle);
	free(s);
}
