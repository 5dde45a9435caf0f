/* gpuledger — the ingest module's statements that other store code asks
 * in another form, for src/store/ alone.
 *
 * How far each cluster's data goes (a response's data_through): the rule
 * is sql/137's view; a chargeback on a session routed to the shards asks
 * each shard's rows of it in its one probe (accounting.c, fleet_probe) and
 * keeps them as this statement's answer, so both are made of this text.
 */
#ifndef GL_INGEST_INT_H
#define GL_INGEST_INT_H

/* The view's columns, in the order of struct gl_ingest_data_through_row. */
#define GL_INGEST_DATA_THROUGH_SQL "SELECT cluster, source, data, through_s FROM ingest_data_through"
/* The statement gl_ingest_data_through() asks: by cluster, data, source. */
#define GL_INGEST_DATA_THROUGH_Q GL_INGEST_DATA_THROUGH_SQL " ORDER BY 1, 3, 2"

#endif
