# The image allow-list is labs.ImageRule now (labs/migrations/0005_imagerule adopts the table as it is).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0001_initial'),
        ('labs', '0005_imagerule'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ImageRule')],
            database_operations=[],
        ),
    ]
