#!/usr/bin/env python3
"""CDK entry point (`make synth`, `make deploy`, `cdk synth`): builds the assets, synthesizes, reports.

`python app.py -c hippocampus.stage=prod` takes the CDK CLI's context overrides (infra/app.py);
the settings are described in docs/configuration.md, deploying in docs/operations.md.
"""

import os

# jsii warns that Node 20 is end-of-life; the warning is noise here (docs/operations.md "Prerequisites").
# It must be set before aws_cdk is imported (the import starts the jsii runtime).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251

from infra.app import main

if __name__ == "__main__":
    main()
