/* A shared object that is not a provider: it lacks rnicpi_provider_v1. */
int not_a_provider_answer(void);
int not_a_provider_answer(void) { return 42; }
