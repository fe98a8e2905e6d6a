/* ox_record.h - recorded example data (the "record" section of our JSON) and verification
 * of a graph against it.
 *
 * A record holds the values the PyTorch bridge fed a model and what the model returned:
 * inputs by placeholder name, parameters/buffers/constants by path, and the flattened
 * outputs of the output node. Tensors arrive either as flat "data" or as a compact "fill"
 * recipe (value[i] = scale * sin(freq * i + phase)); the recipe is kept so writing the
 * record back stays compact. Schema: docs/interpreter.md, section "The record section".
 *
 * json-c is confined to ox_record.c (part of the JSON reader/writer), so this header only
 * forward-declares struct json_object.
 */
#ifndef OX_RECORD_H
#define OX_RECORD_H

#include "ir/ox_buf.h"
#include "ir/ox_diag.h"
#include "ir/ox_graph.h"
#include "load/ox_doc.h"
#include "ops/ox_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_object;

typedef struct OxRecordFill {
  bool present;              /* the tensor came from (and is written back as) a fill recipe */
  double scale, freq, phase; /* kind "sin" */
  OxDType dtype;             /* the recipe's tensor (present only) */
  int32_t rank;
  int64_t shape[OX_TENSOR_MAX_RANK];
} OxRecordFill;

/* A tensor read from a fill recipe is not materialized when the record is read (vit_b_16's 86M
 * parameters would take 1.5 s and 350 MB to load a 2 MB file): t is NULL and fill.present
 * set; ox_record_tensor_new builds it when a verification or a lookup needs it. */
typedef struct OxRecordTensor {
  char *name;        /* inputs: placeholder name; params: path; outputs: NULL */
  OxTensor *t;       /* owned; NULL for a null output, a fill recipe (fill.present) or data kept
                        as text (raw) */
  OxRecordFill fill;
  /* A "data" array read by the document reader's fast path is kept as the text the file had
   * (from its '[' to its ']'; owned), checked when read (ox_record_data_scan) but converted only
   * when a tensor is needed, and written back as it came: resnet18's 11.7M recorded parameters
   * are 158 MB of text, ~2 GB as a json-c tree. Its dtype, rank and shape are in fill (with
   * fill.present false). */
  const char *raw;
  size_t raw_len;
  bool raw_owned;    /* raw is its own allocation (else a span of the record's text) */
  bool raw_b64;      /* raw is a "b64" string (quotes included), not a "data" array */
} OxRecordTensor;

typedef struct OxRecord {
  OxRecordTensor *inputs;
  uint32_t n_inputs;
  OxRecordTensor *params;
  uint32_t n_params;
  OxRecordTensor *outputs;
  uint32_t n_outputs;
  bool has_seed;
  int64_t seed;          /* informational */
  char *text;            /* owned: the document text that data kept as spans points into */
} OxRecord;

OxRecord *ox_record_new(void);
void ox_record_free(OxRecord *r); /* NULL is a no-op */
/* Appenders take ownership of t (outputs: t may be NULL for a null output). */
void ox_record_add_input(OxRecord *r, const char *name, OxTensor *t);
void ox_record_add_param(OxRecord *r, const char *path, OxTensor *t);
void ox_record_add_output(OxRecord *r, OxTensor *t);
/* Whether e holds a tensor (data or a fill recipe); false for a null output. */
bool ox_record_has_tensor(const OxRecordTensor *e);
/* A new tensor (caller frees) with e's values: a copy of its data, or its fill recipe
 * materialized. NULL for a null output (or out of memory). */
OxTensor *ox_record_tensor_new(const OxRecordTensor *e);
/* New tensors (caller frees) of an input by placeholder name / a parameter by path; NULL if
 * absent. */
OxTensor *ox_record_input_new(const OxRecord *r, const char *name);
OxTensor *ox_record_param_new(const OxRecord *r, const char *path);

/* Largest tensor a record may hold (elements); bigger ones are refused when reading. 256M: VGG's
 * first classifier weight has 102.8M (25088 x 4096); a "fill" recipe costs nothing until used, and
 * data are bounded by the input's size cap (OPTIMUS_MAX_INPUT_MB). */
#define OX_RECORD_MAX_ELEMS (256ll << 20)

/* Where a tensor goes in a record. */
typedef enum OxRecordSection { OX_RECORD_INPUTS, OX_RECORD_PARAMS, OX_RECORD_OUTPUTS } OxRecordSection;
/* Appends a tensor kept as its "data" text: raw[0, raw_len) holds a JSON array that
 * ox_record_data_scan took for dtype and the element count of shape; copied, or with borrow
 * kept where it is (the text must then outlive the record: r->text, or the caller's). name: NULL
 * for outputs. */
void ox_record_add_data_text(OxRecord *r, OxRecordSection sec, const char *name, OxDType dtype, int32_t rank,
                             const int64_t *shape, const char *raw, size_t raw_len, bool borrow);
/* The same for a "b64" string that ox_record_b64_extent measured (raw: the string, quotes
 * included; its content is checked by ox_record_b64_check). */
void ox_record_add_b64_text(OxRecord *r, OxRecordSection sec, const char *name, OxDType dtype, int32_t rank,
                            const int64_t *shape, const char *raw, size_t raw_len, bool borrow);
/* Whether some tensor of r is kept as a borrowed span of text. */
bool ox_record_borrows(const OxRecord *r);
/* Appends a fill recipe (fill->present set). */
void ox_record_add_fill(OxRecord *r, OxRecordSection sec, const char *name, const OxRecordFill *fill);
/* Whether a name is already among the inputs / params. */
bool ox_record_has_name(const OxRecord *r, OxRecordSection sec, const char *name);
/* The value a record spells as the string s[0, n): "nan", "NaN", "inf", "Infinity", "-inf",
 * "-Infinity"; false for any other text. */
bool ox_record_special_value(const char *s, size_t n, double *out);
/* The length of the JSON array at s[0, n) (from its '[' to past its ']') when it holds exactly
 * numel values that ox_record_from_json would take for a tensor of dtype, written the way our
 * tokenizer reads them (RFC numbers of at most 18 integer digits and exponents that cannot
 * overflow; "nan", "NaN", "inf", "Infinity", "-inf", "-Infinity" for floating dtypes; true and
 * false); 0 for anything else (the caller then reads the record with json-c, which says what is
 * wrong). Nothing is converted: it is a scan at a few bytes a nanosecond. */
size_t ox_record_data_scan(const char *s, size_t n, OxDType dtype, int64_t numel);
/* For a "b64" value, the extent only: the length of the JSON string at s[0, n) (quotes included)
 * when it is as long as the base64 of numel values of dtype and ends there; 0 otherwise. The
 * content is checked by ox_record_b64_check, once the whole record is read. */
size_t ox_record_b64_extent(const char *s, size_t n, OxDType dtype, int64_t numel);
/* Whether every "b64" string kept in r is the standard base64 (RFC 4648, '=' padding, no line
 * breaks) of exactly its numel values as little-endian bytes (f32/i32 4 bytes, f64/i64 8,
 * f16/bf16 2, b8 1 byte of 0 or 1); two threads when they are megabytes. */
bool ox_record_b64_check(const struct OxRecord *r);
/* Decodes such a string's content (between the quotes) into t (dtype and numel as scanned);
 * false on any fault (then t is partly written). */
bool ox_record_b64_decode(const char *b64, size_t len, OxTensor *t);
/* Converts every tensor kept as data text into values (written then as %.17g numbers, as the
 * tree read's are: the two reads of a document then write the same text). false when out of
 * memory (the tensors converted so far stay converted). */
bool ox_record_materialize(OxRecord *r);
/* Appends the record as JSON text (compact: the shape ox_record_to_json's value prints as with
 * JSON_C_TO_STRING_PLAIN), data kept as text copied as it came; out's streaming sink, if any,
 * takes it a megabyte at a time. */
void ox_record_write_json(const OxRecord *r, OxBuf *out);

/* Reads the value of the "record" key. Returns 0 and *out, or -1 with errors in d
 * ("record: inputs.x: data has 5 values, shape [2, 3] needs 6"). */
int ox_record_from_json(struct json_object *obj, OxRecord **out, OxDiagList *d);
/* A new json object (caller owns one reference). */
struct json_object *ox_record_to_json(const OxRecord *r);

/* ------------------------------------------------------------------ verification */

typedef struct OxVerifyOutput {
  uint32_t index;       /* position in the flattened outputs */
  bool compared;        /* false: nothing to compare (null / non-tensor output) */
  bool pass;
  double max_abs, max_rel, scale;
  OxTolerance tol;      /* tolerance used (by the recorded dtype) */
  char note[192];       /* why it failed or was skipped; "" otherwise */
} OxVerifyOutput;

typedef struct OxVerifyReport {
  bool pass;            /* every compared output passed and the output counts agree */
  uint32_t n_outputs;   /* recorded outputs */
  uint32_t n_produced;  /* flattened outputs the interpreter produced */
  OxVerifyOutput *outputs; /* n_outputs entries, owned */
} OxVerifyReport;

/* Runs graph graph_index of doc with the record's inputs and parameters and compares the
 * result with the recorded outputs. Returns 0 when the comparison ran (rep->pass says
 * whether it passed), -1 when it could not run (no record, no such graph, an interpreter
 * error...) with err set. rep must be released with ox_verify_report_clear. */
int ox_verify_record(const OxDoc *doc, uint32_t graph_index, OxVerifyReport *rep, char *err, size_t errcap);
void ox_verify_report_clear(OxVerifyReport *rep);

/* Prepares an interpreter-ready input set: registers the record's params with in and sets
 * the placeholder values of g by name. Returns 0, or -1 with err (a recorded input that is
 * not a placeholder of g). */
struct OxInterp;
int ox_record_apply(const OxRecord *r, const OxGraph *g, struct OxInterp *in, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
