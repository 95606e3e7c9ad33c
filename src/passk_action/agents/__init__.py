"""How passk asks an agent: a process per attempt, a worker pool, HTTP; serve() for authors."""
