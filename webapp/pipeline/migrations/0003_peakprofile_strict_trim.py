from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0002_defaults")]
    operations = [
        migrations.AddField(
            model_name="peakprofile",
            name="strict",
            field=models.BooleanField(default=False, help_text="Reference code's > for both thresholds (paper: >=)"),
        ),
        # Every existing profile gets the trimmed-peaks rule too: it is the paper's (whole words).
        migrations.AddField(
            model_name="peakprofile",
            name="trim",
            field=models.BooleanField(
                default=True,
                help_text="Trim punctuation and whitespace off peak edges; drop peaks with no letter or "
                "digit (off: the reference code's peaks, for comparison)",
            ),
        ),
    ]
