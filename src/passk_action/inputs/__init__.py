"""The user's files, read and validated once: config, dataset, schema-error wording."""
